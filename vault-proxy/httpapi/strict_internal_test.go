package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
	"github.com/payorch/shared/zone/zonetest"
	"github.com/tidwall/gjson"
)

// strictBodies are the types of the bodies vault-proxy holds to
// strictjson's rules, with a schema each.
var strictBodies = []struct {
	new    func() any
	schema *strictjson.Schema
}{
	{func() any { return new(cardInput) }, cardSchema},
	{func() any { return new(giftCardInput) }, giftCardSchema},
	{func() any { return new(bankInput) }, bankSchema},
	{func() any { return new(rawCardInput) }, givenInFull["card"].schema},
	{func() any { return new(rawBankInput) }, givenInFull["bank"].schema},
	{func() any { return new(configBody) }, configSchema},
	{func() any { return new(authBody) }, authSchema},
	{func() any { return new(struct{}) }, emptySchema},
	{func() any { return new(zone.DetokenizeRequest) }, strictjson.For[zone.DetokenizeRequest]()},
	{func() any { return new(zone.MerchantAccountClosureAttempt) }, strictjson.For[zone.MerchantAccountClosureAttempt]()},
	{func() any { return new(zone.ExpiryUpdate) }, strictjson.For[zone.ExpiryUpdate]()},
}

// FuzzWalkIsDecode: the rules are strictjson's whichever parser reads a
// body. For every body and every type vault-proxy reads, its walk of
// gjson's parse refuses what strictjson.Decode (encoding/json's parse, as
// core-api reads its bodies) refuses, with the same details, and takes
// what it takes. Bodies the two parsers disagree are JSON, nest deeper
// than Decode parses, or repeat a key (Decode reports that alone, before
// the shape) are left out: the rules are not in question there.
func FuzzWalkIsDecode(f *testing.F) {
	for _, seed := range []string{
		`{"method":"card","number":"4111111111111111","expiration_date":"12/30","buyer_id":null}`,
		`{"method":"bank","scheme":"ach","mandate":{"recurring":true,"interval":"monthly"}}`,
		`{"method":"bank","mandate":{"recurring":"yes"}}`,
		`{"method":"bank","mandate":[true]}`,
		`{"display_name":"x","hosts":["a.example",{"host":"b"},7,null]}`,
		`{"kind":"mle","fields":[{"key":"k","value":"v","x":1},{"key":null},"s",{}]}`,
		`{"destination":"d","headers":{"a":"b","c":1,"d":null},"payment_methods":["x",2],"timeout_ms":1.5}`,
		`{"Destination":"d","timeout_ms":99999999999999999999}`,
		`{"a\u0062":1,"a/b~c":{"d":[]}}`,
		`[]`, `"x"`, `null`, `{}`, ` `, `{"attempt_id":7}`,
	} {
		f.Add([]byte(seed))
	}
	for _, b := range zonetest.Bodies {
		f.Add(zonetest.Read(f, b.File))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if json.Valid(body) != gjson.ValidBytes(body) || deeperThan(body, strictjson.MaxDepth) {
			t.Skip("the parsers differ, or Decode does not parse it")
		}
		for _, b := range strictBodies {
			want := strictjson.Decode(body, b.new(), nil)
			if hasDetail(want, strictjson.TypeDuplicate) {
				continue
			}
			_, got := checkBody(body, b.schema, gjson.ParseBytes)
			if !sameError(got, want) {
				t.Fatalf("%T: %s\nwalk:   %v\nDecode: %v", b.new(), body, describe(got), describe(want))
			}
		}
	})
}

func deeperThan(body []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == '{' || c == '['):
			if depth++; depth > max {
				return true
			}
		case !inString && (c == '}' || c == ']'):
			depth--
		}
	}
	return false
}

func hasDetail(err error, typ string) bool {
	var e *apierror.Error
	if errors.As(err, &e) {
		for _, d := range e.Details {
			if d.Type == typ {
				return true
			}
		}
	}
	return false
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *apierror.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) || ea.Status != eb.Status {
		return false
	}
	// A malformed body's message says where encoding/json stopped, which
	// gjson does not: both say it is malformed, at the body.
	if hasDetail(a, strictjson.TypeMalformed) && hasDetail(b, strictjson.TypeMalformed) {
		return true
	}
	return reflect.DeepEqual(ea.Details, eb.Details)
}

func describe(err error) string {
	if err == nil {
		return "accepted"
	}
	var e *apierror.Error
	if errors.As(err, &e) {
		raw, _ := json.Marshal(e.Details)
		return e.Message + " " + string(raw)
	}
	return err.Error()
}
