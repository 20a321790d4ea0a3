package auditspool

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
)

// record is the oracle: encoding/json marshalling it is what appendRecord
// must write.
type record struct {
	At        time.Time      `json:"at"`
	Actor     string         `json:"actor"`
	Merchant  string         `json:"merchant_account_id"`
	Action    string         `json:"action"`
	Tokens    []uuid.UUID    `json:"tokens,omitempty"`
	Purpose   string         `json:"purpose,omitempty"`
	Outcome   string         `json:"outcome"`
	RequestID string         `json:"request_id,omitempty"`
	Detail    map[string]any `json:"detail,omitempty"`
}

func recordOf(e vaultproxy.AuditEvent) record {
	return record{At: e.OccurredAt.UTC(), Actor: e.Actor, Merchant: e.MerchantAccountID, Action: e.Action, Tokens: e.Tokens,
		Purpose: e.Purpose, Outcome: e.Outcome, RequestID: e.RequestID, Detail: e.Detail}
}

// The hand-written record encoder writes exactly what encoding/json writes
// for the record type, for every kind of value an audit detail holds and
// for the fallback.
func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 23, 17, 4, 5, 123456789, time.FixedZone("CET", 3600))
	tok := uuid.MustParse("0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e")
	cases := []struct {
		name string
		e    vaultproxy.AuditEvent
	}{
		{"minimal", vaultproxy.AuditEvent{OccurredAt: at, Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"}},
		{"forward", vaultproxy.AuditEvent{OccurredAt: at, Actor: "jti-1", MerchantAccountID: "default", Action: "forward",
			Tokens: []uuid.UUID{tok, uuid.Nil}, Purpose: "vault-forward", Outcome: "failure: forward_timeout", RequestID: "req-<1>&",
			Detail: map[string]any{"placeholders": []string{"CARD_NUMBER_1", "CARD_CRYPTOGRAM_OR_EMPTY_STRING_2"}, "host": "api.example:8443",
				"method": "POST", "duration_ms": int64(12), "status": 502, "authentications": []string{tok.String()}}}},
		{"escapes", vaultproxy.AuditEvent{OccurredAt: at, Actor: "\"quoted\"\n\u2028", MerchantAccountID: "m\\", Action: "x\x00", Outcome: "\xff"}},
		{"detail values through the fallback", vaultproxy.AuditEvent{OccurredAt: at, Actor: "a", MerchantAccountID: "m", Action: "a", Outcome: "o",
			Detail: map[string]any{"f": 1.5, "big": math.MaxFloat64, "nested": map[string]any{"k": []int{1, 2}}, "nil": nil, "b": true,
				"nilslice": []string(nil), "empty": []string{}, "u": uint8(7), "key with \"quote\"": "v"}}},
		{"forward benchmarked", forwardEvent()},
		{"empty detail and tokens", vaultproxy.AuditEvent{OccurredAt: at, Actor: "a", MerchantAccountID: "m", Action: "a", Outcome: "o",
			Tokens: []uuid.UUID{}, Detail: map[string]any{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(recordOf(tc.e))
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendRecord(nil, tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("appendRecord:\n%s\nencoding/json:\n%s", got, want)
			}
		})
	}
}

func TestAppendRecordRefusesWhatJSONCannotWrite(t *testing.T) {
	for _, e := range []vaultproxy.AuditEvent{
		{OccurredAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Outcome: "o"},
		{OccurredAt: time.Now(), Outcome: "o", Detail: map[string]any{"f": math.NaN()}},
		{OccurredAt: time.Now(), Outcome: "o", Detail: map[string]any{"ch": make(chan int)}},
	} {
		if _, err := appendRecord(nil, e); err == nil {
			t.Fatalf("appendRecord(%v) wrote a record encoding/json refuses", e)
		}
	}
}

func FuzzAppendRecordMatchesEncodingJSON(f *testing.F) {
	f.Add("actor", "merchant", "forward", "success", "req-1", "CARD_NUMBER_1", "host:443", int64(1700000000123456789), int64(200))
	f.Add("<&>", "\u2028", "\x00", "\xff\xfe", "", "", "", int64(0), int64(-1))
	f.Fuzz(func(t *testing.T, actor, merchant, action, outcome, rid, placeholder, host string, nanos, status int64) {
		e := vaultproxy.AuditEvent{OccurredAt: time.Unix(0, nanos), Actor: actor, MerchantAccountID: merchant, Action: action,
			Outcome: outcome, RequestID: rid, Tokens: []uuid.UUID{uuid.NewSHA1(uuid.Nil, []byte(actor))},
			Detail: map[string]any{"placeholders": []string{placeholder}, "host": host, "status": status, host: placeholder}}
		want, err := json.Marshal(recordOf(e))
		got, gerr := appendRecord(nil, e)
		if (err == nil) != (gerr == nil) {
			t.Fatalf("encoding/json error %v, appendRecord error %v", err, gerr)
		}
		if err == nil && string(got) != string(want) {
			t.Fatalf("appendRecord:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

// BenchmarkAppendRecordForward is the encoding of a /vault-forward's
// record alone (BenchmarkRecordForward adds the frame and the segment).
func BenchmarkAppendRecordForward(b *testing.B) {
	e := forwardEvent()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendRecord(buf[:0], e); err != nil {
			b.Fatal(err)
		}
	}
}

// forwardEvent is the event a /vault-forward with an authentication writes.
func forwardEvent() vaultproxy.AuditEvent {
	return vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", MerchantAccountID: "default",
		Action: "forward", Tokens: []uuid.UUID{uuid.New(), uuid.New()}, Purpose: "vault-forward", Outcome: "success", RequestID: "req-0192f1c4",
		Detail: map[string]any{"authentications": []string{uuid.NewString()},
			"placeholders": []string{"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_1", "CARD_EXPIRATION_DATE_YY_1", "CARD_SECURITY_CODE_1"},
			"host":         "127.0.0.1:8443", "method": "POST", "duration_ms": int64(3), "status": 200}}
}
