package card_test

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/payorch/tokenizer/card"
)

// TestRedaction prints, marshals and logs every secret-carrying value in
// every way a careless caller might, and looks for the PAN, the security
// code and any run of 13+ digits in the output.
func TestRedaction(t *testing.T) {
	const (
		pan  = "4111111111111111"
		amex = "378282246310005"
		cvv3 = "987"
		cvv4 = "9731"
	)
	n := mustNumber(t, "4111 1111 1111 1111")
	an := mustNumber(t, amex)
	code, err := card.ParseSecurityCode(cvv3, card.SchemeVisa)
	if err != nil {
		t.Fatal(err)
	}
	acode, err := card.ParseSecurityCode(cvv4, card.SchemeAmex)
	if err != nil {
		t.Fatal(err)
	}
	c, errs := card.Validate(card.CardInput{Number: []byte(amex), ExpirationDate: "12/30", SecurityCode: []byte(cvv4)}, fixedNow)
	if errs != nil {
		t.Fatal(errs)
	}
	type request struct {
		Number       card.Number       `json:"number"`
		SecurityCode card.SecurityCode `json:"security_code"`
		Expiry       card.Expiry       `json:"expiration_date"`
	}
	type hidden struct {
		pan  card.Number
		code card.SecurityCode
	}
	type embedded struct {
		card.Number
		Note string
	}

	values := []struct {
		name string
		v    any
		// opaque: fmt prints this value's internals (pointer addresses,
		// with %d in decimal) or hex-encodes its redacted text (%x of an
		// error), so long digit runs are expected and only the secrets
		// themselves, in every encoding, are looked for.
		opaque  bool
		secrets []string
	}{
		{"Number", n, false, []string{pan}},
		{"*Number", &n, false, []string{pan}},
		{"amex Number", an, false, []string{amex}},
		{"SecurityCode", code, false, []string{cvv3}},
		{"*SecurityCode", &code, false, []string{cvv3}},
		{"amex SecurityCode", acode, false, []string{cvv4}},
		{"Card", c, false, []string{amex, cvv4}},
		{"*Card", &c, false, []string{amex, cvv4}},
		{"struct with exported fields", request{n, code, card.Expiry{Month: 1, Year: 2030}}, false, []string{pan, cvv3}},
		{"pointer to struct", &request{n, code, card.Expiry{Month: 1, Year: 2030}}, false, []string{pan, cvv3}},
		// fmt cannot call methods through unexported fields: it prints
		// the handle, an address, never the digits.
		{"struct with unexported fields", hidden{n, code}, true, []string{pan, cvv3}},
		{"pointer to struct with unexported fields", &hidden{an, acode}, true, []string{amex, cvv4}},
		{"embedded Number", embedded{n, "x"}, false, []string{pan}},
		{"slice", []card.Number{n, an}, false, []string{pan, amex}},
		{"map", map[string]card.Number{"a": n}, false, []string{pan}},
		{"any slice", []any{n, code}, false, []string{pan, cvv3}},
		{"error wrapping a Number", fmt.Errorf("charge %v failed", n), true, []string{pan}},
		{"error wrapping with %w", fmt.Errorf("outer: %w", fmt.Errorf("charge %s failed", n)), true, []string{pan}},
		{"zeroed Number", func() card.Number { z := mustNumber(t, pan); z.Zero(); return z }(), false, []string{pan}},
		{"zero Number", card.Number{}, false, nil},
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%T %v", "%20.4v", "%-30s|", "%+d", "%6d", "% x"}

	for _, val := range values {
		t.Run(val.name, func(t *testing.T) {
			for _, verb := range verbs {
				t.Run("fmt "+verb, func(t *testing.T) {
					out := fmt.Sprintf(verb, val.v)
					if val.opaque {
						assertNoSecrets(t, out, val.secrets...)
						return
					}
					assertNoCardData(t, out, val.secrets...)
				})
			}
			t.Run("Sprint", func(t *testing.T) {
				assertNoCardData(t, fmt.Sprint(val.v), val.secrets...)
				assertNoCardData(t, fmt.Sprintln("x", val.v), val.secrets...)
			})
			t.Run("Sprint in an error", func(t *testing.T) {
				err := errors.New(fmt.Sprint("declined: ", val.v))
				assertNoCardData(t, err.Error(), val.secrets...)
			})
			t.Run("json", func(t *testing.T) {
				b, err := json.Marshal(val.v)
				if err != nil {
					// errors (a func value, say) are fine; their text must
					// not leak either.
					assertNoCardData(t, err.Error(), val.secrets...)
					return
				}
				assertNoCardData(t, string(b), val.secrets...)
			})
			t.Run("json in a struct", func(t *testing.T) {
				b, err := json.Marshal(struct {
					Data any `json:"data"`
				}{val.v})
				if err == nil {
					assertNoCardData(t, string(b), val.secrets...)
				}
			})
			for _, h := range []struct {
				name string
				new  func(*bytes.Buffer) slog.Handler
			}{
				{"slog json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, noTime) }},
				{"slog text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, noTime) }},
			} {
				t.Run(h.name, func(t *testing.T) {
					var buf bytes.Buffer
					log := slog.New(h.new(&buf))
					log.Info("payment", "card", val.v)
					log.Info("payment", slog.Any("card", val.v), slog.Group("g", "v", val.v))
					log.With("card", val.v).Info("with")
					log.Info(fmt.Sprint(val.v))
					assertNoCardData(t, buf.String(), val.secrets...)
				})
			}
		})
	}
}

// noTime drops slog's timestamp, whose digits could hold a short secret
// such as a security code by chance.
var noTime = &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}}

// TestRedactedForms pins the exact redacted text, so a change to it is a
// decision, not an accident.
func TestRedactedForms(t *testing.T) {
	n := mustNumber(t, "4111111111111111")
	code, _ := card.ParseSecurityCode("123", card.SchemeVisa)
	mj := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	mt := func(v interface{ MarshalText() ([]byte, error) }) string { b, _ := v.MarshalText(); return string(b) }
	tests := []struct {
		name, got, want string
	}{
		{"Number String", n.String(), "card(visa ****1111)"},
		{"Number %v", fmt.Sprintf("%v", n), "card(visa ****1111)"},
		{"Number %#v", fmt.Sprintf("%#v", n), "card(visa ****1111)"},
		{"Number %q", fmt.Sprintf("%q", n), `"card(visa ****1111)"`},
		{"Number JSON", mj(n), `"card(visa ****1111)"`},
		{"Number text", mt(n), "card(visa ****1111)"},
		{"Number slog", n.LogValue().String(), "card(visa ****1111)"},
		{"SecurityCode String", code.String(), "[REDACTED-CVV]"},
		{"SecurityCode %d", fmt.Sprintf("%d", code), "[REDACTED-CVV]"},
		{"SecurityCode JSON", mj(code), `"[REDACTED-CVV]"`},
		{"SecurityCode text", mt(code), "[REDACTED-CVV]"},
		{"SecurityCode slog", code.LogValue().String(), "[REDACTED-CVV]"},
		{"Card %+v", fmt.Sprintf("%+v", card.Card{Number: n, Expiry: card.Expiry{Month: 1, Year: 2030}, SecurityCode: code}),
			"{Number:card(visa ****1111) Expiry:01/30 SecurityCode:[REDACTED-CVV]}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// TestNoWayIn checks that the secret types cannot be filled or exported by
// reflection-based encoders: only the Parse functions make them.
func TestNoWayIn(t *testing.T) {
	t.Run("json into Number", func(t *testing.T) {
		var n card.Number
		//lint:ignore SA9005 the failure to unmarshal is what is tested
		if err := json.Unmarshal([]byte(`"4111111111111111"`), &n); err == nil || !n.IsZero() {
			t.Errorf("json.Unmarshal filled a Number (err %v)", err)
		}
	})
	t.Run("json into SecurityCode", func(t *testing.T) {
		var c card.SecurityCode
		//lint:ignore SA9005 the failure to unmarshal is what is tested
		if err := json.Unmarshal([]byte(`"123"`), &c); err == nil || !c.IsZero() {
			t.Errorf("json.Unmarshal filled a SecurityCode (err %v)", err)
		}
	})
	t.Run("gob refuses Number", func(t *testing.T) {
		var buf bytes.Buffer
		err := gob.NewEncoder(&buf).Encode(mustNumber(t, "4111111111111111"))
		if err == nil {
			t.Error("gob encoded a Number")
		}
		assertNoCardData(t, buf.String()+fmt.Sprint(err), "4111111111111111")
	})
}

func TestFieldErrorText(t *testing.T) {
	_, err := card.ParseNumber("4111111111111112")
	if got := err.Error(); !strings.HasPrefix(got, "number: ") {
		t.Errorf("Error() = %q, want the field name first", got)
	}
}
