package httpapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
)

type inner struct {
	N *int    `json:"n"`
	S *string `json:"s"`
}

type sample struct {
	Name  coreapi.Optional[string] `json:"name"`
	In    coreapi.Optional[inner]  `json:"in"`
	List  []inner                  `json:"list"`
	Flag  bool                     `json:"flag"`
	Count uint8                    `json:"count"`
	Tags  map[string]string        `json:"tags"`
}

func TestDecodeStrict(t *testing.T) {
	type det struct{ pointer, typ string }
	tests := []struct {
		name    string
		ct      string
		body    string
		status  int
		details []det
	}{
		{"ok", "application/json", `{"name":"a","in":{"n":1},"list":[{"s":"x"}],"flag":true,"count":255,"tags":{"a":"b"}}`, 0, nil},
		{"charset", "application/json; charset=UTF-8", `{}`, 0, nil},
		{"problem json", "application/merge-patch+json", `{}`, 0, nil},
		{"text", "text/plain", `{}`, 415, nil},
		{"none", "", `{}`, 415, nil},
		{"latin1", "application/json; charset=latin1", `{}`, 415, nil},
		{"too large", "application/json", `{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, nil},
		{"empty", "application/json", ` `, 400, []det{{"", "value_error.missing"}}},
		{"syntax", "application/json", `{"name":}`, 400, []det{{"", "value_error.jsondecode"}}},
		{"truncated", "application/json", `{"name":"a"`, 400, []det{{"", "value_error.jsondecode"}}},
		{"trailing", "application/json", `{}x`, 400, []det{{"", "value_error.jsondecode"}}},
		{"deep", "application/json", `{"tags":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, 400, []det{{"", "value_error.jsondecode"}}},
		{"unknown nested", "application/json", `{"in":{"n":1,"x":2},"list":[{},{"y":1}]}`, 400, []det{{"/in/x", "value_error.extra"}, {"/list/1/y", "value_error.extra"}}},
		{"types", "application/json", `{"name":1,"flag":"yes","count":256,"tags":{"a":1},"list":{}}`, 400, []det{
			{"/name", "type_error.str"}, {"/flag", "type_error.bool"}, {"/count", "type_error.integer"}, {"/tags/a", "type_error.str"}, {"/list", "type_error.list"}}},
		{"float for int", "application/json", `{"in":{"n":1.5}}`, 400, []det{{"/in/n", "type_error.integer"}}},
		{"null not allowed", "application/json", `{"flag":null}`, 400, []det{{"/flag", "type_error.none.not_allowed"}}},
		{"nulls allowed", "application/json", `{"name":null,"in":null,"list":null,"tags":null}`, 0, nil},
		{"duplicate", "application/json", `{"name":"a","name":"b"}`, 400, []det{{"/name", "value_error.duplicate"}}},
		{"case", "application/json", `{"NAME":"a"}`, 400, []det{{"/NAME", "value_error.extra"}}},
		{"not object", "application/json", `"x"`, 400, []det{{"", "type_error.dict"}}},
		{"NUL in strings and keys", "application/json", `{"name":"a\u0000","tags":{"k\u0000":"v","w":"\u0000"},"list":[{"s":"\u0000"}]}`, 400, []det{
			{"/name", "value_error.str.encoding"}, {"/tags/k\x00", "value_error.str.encoding"}, {"/tags/w", "value_error.str.encoding"}, {"/list/0/s", "value_error.str.encoding"}}},
		{"escaped backslash before u0000 is text", "application/json", `{"name":"\\u0000"}`, 0, nil},
		// No card number is stored in any field (zone.DigitFields aside).
		{"card numbers in values and keys", "application/json", `{"name":"4111 1111 1111 1111","tags":{"a":"ref 5555555555554444","4111111111111111":"v"},"list":[{"s":"600000000007"}]}`, 400, []det{
			{"/name", "value_error.card_data"}, {"/tags/a", "value_error.card_data"}, {"/tags", "value_error.card_data"}, {"/list/0/s", "value_error.card_data"}}},
		{"numbers that are not card numbers", "application/json", `{"name":"4111111111111112","tags":{"a":"41111111111"}}`, 0, nil},
		// A phone number or a card network's transaction id (zone.DigitFields)
		// is refused only when its digits are a card number of a known
		// scheme: IIN range, length and Luhn check.
		{"card numbers of known schemes in digit fields", "application/json", `{"tags":{"phone_number":"+378282246310005","scheme_transaction_id":"4111111111111111"}}`, 400, []det{
			{"/tags/phone_number", "value_error.card_data"}, {"/tags/scheme_transaction_id", "value_error.card_data"}}},
		{"a grouped card number in a phone number", "application/json", `{"tags":{"phone_number":"+1 4111 1111 1111 1111"}}`, 400, []det{{"/tags/phone_number", "value_error.card_data"}}},
		{"a 13-digit visa number as a phone number", "application/json", `{"tags":{"phone_number":"+4222222222222"}}`, 400, []det{{"/tags/phone_number", "value_error.card_data"}}},
		{"a 14-digit diners number as a phone number", "application/json", `{"tags":{"phone_number":"+36227206271667"}}`, 400, []det{{"/tags/phone_number", "value_error.card_data"}}},
		{"a card number in a transaction id's text", "application/json", `{"tags":{"scheme_transaction_id":"txn 5555-5555-5555-4444"}}`, 400, []det{{"/tags/scheme_transaction_id", "value_error.card_data"}}},
		{"an array under a digit field is no phone number", "application/json", `{"tags":{"phone_number":["600000000007"]}}`, 400, []det{{"/tags/phone_number/0", "value_error.card_data"}}},
		{"luhn-valid digit fields of no scheme", "application/json", `{"tags":{"scheme_transaction_id":"412345678901233","phone_number":"+600000000007"},"list":[{"s":"x"}]}`, 0, nil},
		{"a luhn-valid phone number", "application/json", `{"tags":{"phone_number":"+819012345677"}}`, 0, nil},
		{"a luhn-valid number of no scheme in another field", "application/json", `{"tags":{"a":"412345678901233"}}`, 400, []det{{"/tags/a", "value_error.card_data"}}},
		{"lone high surrogate", "application/json", `{"name":"\ud800"}`, 400, []det{{"", "value_error.str.encoding"}}},
		{"lone low surrogate", "application/json", `{"name":"a\udc00b"}`, 400, []det{{"", "value_error.str.encoding"}}},
		{"high surrogate then another escape", "application/json", `{"name":"\ud800\u0041"}`, 400, []det{{"", "value_error.str.encoding"}}},
		{"surrogate pair", "application/json", `{"name":"\ud83d\ude00"}`, 0, nil},
		{"escaped backslash before ud800 is text", "application/json", `{"name":"\\ud800"}`, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			var dst sample
			err := DecodeStrict(r, &dst)
			if tt.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != tt.status {
				t.Fatalf("err = %v", err)
			}
			if tt.details == nil {
				return
			}
			if len(e.Details) != len(tt.details) {
				t.Fatalf("details %+v", e.Details)
			}
			for i, d := range tt.details {
				if e.Details[i].Pointer != d.pointer || e.Details[i].Type != d.typ || e.Details[i].Location != "body" {
					t.Fatalf("detail %d = %+v, want %+v", i, e.Details[i], d)
				}
			}
		})
	}
}

func TestDecodeStrictOptional(t *testing.T) {
	var dst sample
	if err := DecodeStrictBytes([]byte(`{"name":null,"in":{"n":2}}`), &dst); err != nil {
		t.Fatal(err)
	}
	if !dst.Name.Set || !dst.Name.Null || !dst.In.Set || dst.In.Null || *dst.In.Value.N != 2 {
		t.Fatalf("%+v", dst)
	}
	dst = sample{}
	if err := DecodeStrictBytes([]byte(`{}`), &dst); err != nil || dst.Name.Set || dst.In.Set {
		t.Fatalf("%+v %v", dst, err)
	}
}

func FuzzDecodeStrict(f *testing.F) {
	f.Add([]byte(`{"name":"a","in":{"n":1},"list":[{"s":"x"}],"tags":{"a":"b"}}`))
	f.Add([]byte(`{"a/b~":[1,{"x":null}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst sample
		err := DecodeStrictBytes(body, &dst)
		if err != nil {
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("not a 400: %v", err)
			}
		}
	})
}
