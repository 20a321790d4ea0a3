// Package zonetest gives the tests of both sides of the zone boundary the
// golden fixtures of shared/zone/testdata: vault-proxy's tests that its
// internal routes take and give them, core-api's that its client sends
// and reads them, and zone's own that each decodes strictly into its type.
package zonetest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/payorch/shared/zone"
)

// Body is a fixture and the zone type it is a body of.
type Body struct {
	File string
	New  func() any // a pointer to a zero value of the type
}

// Bodies lists every fixture.
var Bodies = []Body{
	{"card_metadata.json", func() any { return new(zone.CardMetadata) }},
	{"expiry_update.json", func() any { return new(zone.ExpiryUpdate) }},
	{"detokenize_request.json", func() any { return new(zone.DetokenizeRequest) }},
	{"detokenize_response.json", func() any { return new(zone.DetokenizeResponse) }},
	{"vaulted_record_page.json", func() any { return new(zone.VaultedRecordPage) }},
	{"merchant_account_usage.json", func() any { return new(zone.MerchantAccountUsage) }},
	{"merchant_account_closure_attempt.json", func() any { return new(zone.MerchantAccountClosureAttempt) }},
	{"merchant_account_closure.json", func() any { return new(zone.MerchantAccountClosure) }},
	{"vaulted_payment_method_card.json", func() any { return new(zone.VaultedPaymentMethod) }},
	{"vaulted_payment_method_bank.json", func() any { return new(zone.VaultedPaymentMethod) }},
}

// Read returns the fixture file's bytes.
func Read(t testing.TB, file string) []byte {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("zonetest: cannot locate the fixtures")
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Decode reads the fixture file into a new T, refusing unknown fields.
func Decode[T any](t testing.TB, file string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(Read(t, file)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// SameJSON reports whether a and b are the same JSON value, whatever the
// order of their object members and their spacing.
func SameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
