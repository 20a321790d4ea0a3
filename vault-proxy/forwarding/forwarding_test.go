package forwarding

import (
	"strings"
	"testing"
)

func TestNormalizeHosts(t *testing.T) {
	got, errs := NormalizeHosts([]string{"API.Processor.Example", "127.0.0.1:9999", "api.processor.example", "[2001:DB8::1]:8443"})
	if len(errs) != 0 || strings.Join(got, " ") != "api.processor.example 127.0.0.1:9999 [2001:db8::1]:8443" {
		t.Fatalf("got %v %v", got, errs)
	}
	for _, bad := range []string{"https://a.example", "a.example/pay", "a.example?x", "u@a.example", "a.example:0", "a.example:99999", "", "a b.example"} {
		if _, errs := NormalizeHosts([]string{"ok.example", bad}); len(errs) != 1 || errs[0].Pointer != "/hosts/1" {
			t.Errorf("%q: %v", bad, errs)
		}
	}
	if _, errs := NormalizeHosts(nil); len(errs) != 1 || errs[0].Pointer != "/hosts" {
		t.Errorf("empty list: %v", errs)
	}
}

func TestSecretFields(t *testing.T) {
	for _, tc := range []struct {
		kind, key string
		secret    bool
	}{
		{KindSignature, "key", true}, {KindSignature, "algorithm", false}, {KindSignature, "key_id", false},
		{KindMTLS, "private_key", true}, {KindMTLS, "certificate", false}, {KindMTLS, "ca_certificate", false},
		{KindMLE, "public_key", false}, {KindMLE, "anything", true}, {"unknown", "algorithm", true},
	} {
		if IsSecret(tc.kind, tc.key) != tc.secret {
			t.Errorf("%s/%s: secret=%v", tc.kind, tc.key, !tc.secret)
		}
	}
}

func TestCheckOrder(t *testing.T) {
	const s, m, e = KindSignature, KindMTLS, KindMLE
	for _, tc := range []struct {
		name  string
		kinds []string
		want  *OrderError // nil: allowed
	}{
		{"none", nil, nil},
		{"signature", []string{s}, nil},
		{"mle", []string{e}, nil},
		{"mle then signature", []string{e, s}, nil},
		{"two mle then two signatures", []string{e, e, s, s}, nil},
		{"mtls first", []string{m, e, s}, nil},
		{"mtls between", []string{e, m, s}, nil},
		{"mtls last", []string{e, s, m}, nil},
		{"signature then mle", []string{s, e}, &OrderError{0, 1}},
		{"signature, mtls, mle", []string{s, m, e}, &OrderError{0, 2}},
		{"a signature after does not help", []string{e, s, e, s}, &OrderError{1, 2}},
		{"the first signature is named", []string{m, s, s, e}, &OrderError{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			methods := make([]*Opened, len(tc.kinds))
			for i, k := range tc.kinds {
				methods[i] = &Opened{Kind: k}
			}
			err := CheckOrder(methods)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if got, ok := err.(*OrderError); !ok || *got != *tc.want {
				t.Fatalf("got %v, want %+v", err, *tc.want)
			}
		})
	}
}
