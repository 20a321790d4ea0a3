package httpapi

import (
	"bytes"
	"testing"

	"github.com/payorch/shared/apierror"
	"github.com/valyala/fasthttp"
)

// Where the simulator does not exist (production) a scenario write is
// 404, card number or not, and the request's buffer is cleared.
func TestThreeDSScenariosDisabled(t *testing.T) {
	h := &ThreeDSScenarios{Enabled: false}
	for _, body := range []string{
		`{"outcome":{"authentication":{"transaction_status":"Y"}}}`,
		`{"conditions":{"card_number":"4000000000001091"},"outcome":{"authentication":{"transaction_status":"Y"}}}`,
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/three-ds-scenarios")
		ctx.Request.SetBodyString(body)
		err := h.Write(&ctx)
		if e := apierror.As(err); e == nil || e.Status != 404 {
			t.Fatalf("%s: %v, want 404", body, err)
		}
		if bytes.Contains(ctx.Request.Body(), []byte("4000")) {
			t.Fatalf("body not cleared: %q", ctx.Request.Body())
		}
	}
}

// The card_number member is found by its exact bytes, whatever the
// spacing; one written with escapes is not (its bytes are not the
// digits), and is refused by the pass-through's search instead.
func TestCardCondition(t *testing.T) {
	for _, tc := range []struct {
		body  string
		found bool
	}{
		{`{"conditions":{"card_number":"4111111111111111"}}`, true},
		{"{ \"outcome\":{}, \"conditions\" :\n{ \"bin\":\"4\" , \"card_number\" : null } }", true},
		{`{"conditions":{"card_number":"\u0034111111111111111"}}`, false},
		{`{"conditions":{"bin":"4111"}}`, false},
		{`{"card_number":"4111111111111111"}`, false},
		{`{"conditions":{"card_number":"4111111111111111"}`, false},
	} {
		body := []byte(tc.body)
		key, value, found := cardCondition(body)
		if found != tc.found {
			t.Errorf("%s: found %v", tc.body, found)
			continue
		}
		if found && (string(body[key.Index:key.Index+len(key.Raw)]) != `"card_number"` || string(body[value.Index:value.Index+len(value.Raw)]) != value.Raw) {
			t.Errorf("%s: key %q value %q", tc.body, key.Raw, value.Raw)
		}
	}
	if err := refuseSensitive([]byte("/three-ds-scenarios"), []byte(`{"conditions":{"card_number":"\u0034111111111111111"}}`)); apierror.As(err) == nil {
		t.Error("an escaped card number passed the search")
	}
}
