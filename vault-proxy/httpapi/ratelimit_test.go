package httpapi_test

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/ratelimit"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// The public listener's request limit: a bucket per signing key for valid
// tokens, one per remote address for every other request; probes are
// never limited, and a refused request never reaches its handler.
func TestRouterRateLimit(t *testing.T) {
	const issuer = "test"
	priv, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys := auth.NewKeySet()
	if _, err := keys.Add(&priv.PublicKey, issuer); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(auth.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	token, err := auth.Mint(priv, issuer, []string{"vault-forward.write"}, time.Hour, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var refused []string
	rt := httpapi.NewRouter(logging.New(io.Discard, slog.LevelInfo))
	rt.SetRateLimit(ratelimit.NewGuard(ratelimit.Policy{Rate: 1, Burst: 2}, func() time.Time { return now },
		func(bucket string) { refused = append(refused, bucket) }), v)
	served := 0
	ok := func(ctx *fasthttp.RequestCtx) error {
		served++
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return nil
	}
	rt.Handle(fasthttp.MethodPost, "/vault-forward", ok)
	rt.Health()

	do := func(path, authorization string, ip byte) *fasthttp.RequestCtx {
		var req fasthttp.Request
		req.Header.SetMethod(fasthttp.MethodPost)
		if path == "/healthz" {
			req.Header.SetMethod(fasthttp.MethodGet)
		}
		req.SetRequestURI(path)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		ctx := &fasthttp.RequestCtx{}
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, ip), Port: 1234}, nil)
		rt.Handler()(ctx)
		return ctx
	}
	for i, c := range []struct {
		path, authorization string
		ip                  byte
		want                int
	}{
		{"/vault-forward", "Bearer " + token, 1, 204},
		{"/vault-forward", "Bearer " + token, 2, 204}, // the key's bucket, from any address
		{"/vault-forward", "Bearer " + token, 3, 429},
		{"/vault-forward", "", 1, 204}, // no token: the address's bucket
		{"/vault-forward", "Bearer forged", 1, 204},
		{"/vault-forward", "", 1, 429},
		{"/vault-forward", "", 2, 204}, // another address
		{"/healthz", "", 1, 200},       // probes never
	} {
		if got := do(c.path, c.authorization, c.ip).Response.StatusCode(); got != c.want {
			t.Errorf("request %d: %d; want %d", i, got, c.want)
		}
	}
	if served != 5 {
		t.Errorf("the handler ran %d times; want 5 (none for a refusal)", served)
	}
	if len(refused) != 2 || refused[0] != ratelimit.BucketCredential || refused[1] != ratelimit.BucketAddress {
		t.Errorf("refusals counted %v", refused)
	}

	ctx := do("/vault-forward", "Bearer "+token, 1)
	body := ctx.Response.Body()
	if gjson.GetBytes(body, "code").String() != "rate_limited" || gjson.GetBytes(body, "status").Int() != 429 ||
		gjson.GetBytes(body, "request_id").String() == "" {
		t.Errorf("refusal body %s", body)
	}
	for k, want := range map[string]string{"Retry-After": "1", "RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "2"} {
		if got := string(ctx.Response.Header.Peek(k)); got != want {
			t.Errorf("%s = %q; want %q", k, got, want)
		}
	}
	now = now.Add(time.Second)
	if got := do("/vault-forward", "Bearer "+token, 1).Response.StatusCode(); got != 204 {
		t.Errorf("after a second: %d; want 204", got)
	}
}
