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
