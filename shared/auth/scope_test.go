package auth_test

import (
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		granted []string
		needed  string
		want    bool
	}{
		{"exact write", []string{"buyers.write"}, "buyers.write", true},
		{"exact read", []string{"buyers.read"}, "buyers.read", true},
		{"write implies read", []string{"buyers.write"}, "buyers.read", true},
		{"read does not imply write", []string{"buyers.read"}, "buyers.write", false},
		{"other resource", []string{"buyers.write"}, "transactions.read", false},
		{"resource prefix is not a match", []string{"vault-forward.write"}, "vault-forward-configs.write", false},
		{"wildcard write", []string{"*.write"}, "payment-methods.write", true},
		{"wildcard write implies read", []string{"*.write"}, "transactions.read", true},
		{"wildcard read", []string{"*.read"}, "transactions.read", true},
		{"wildcard read does not write", []string{"*.read"}, "transactions.write", false},
		{"wildcard covers vault-forward", []string{"*.write"}, "vault-forward.write", true},
		{"one of many", []string{"buyers.read", "transactions.write"}, "transactions.write", true},
		{"no scopes", nil, "buyers.read", false},
		{"needed wildcard never matches", []string{"*.write"}, "*.write", false},
		{"needed malformed", []string{"buyers.write"}, "buyers", false},
		{"needed unknown action", []string{"buyers.write"}, "buyers.delete", false},
		{"granted star alone ignored", []string{"*"}, "buyers.read", false},
		{"granted star.star ignored", []string{"*.*"}, "buyers.read", false},
		{"granted resource wildcard ignored", []string{"buyers.*"}, "buyers.read", false},
		{"granted prefix wildcard ignored", []string{"vault-forward*.write"}, "vault-forward.write", false},
		{"granted upper case ignored", []string{"Buyers.write"}, "Buyers.write", false},
		{"granted with spaces ignored", []string{" buyers.write"}, "buyers.write", false},
		{"granted extra dot ignored", []string{"buyers.write.x"}, "buyers.write", false},
		{"granted admin action ignored", []string{"buyers.admin"}, "buyers.read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auth.Match(tt.granted, tt.needed); got != tt.want {
				t.Errorf("Match(%q, %q) = %v", tt.granted, tt.needed, got)
			}
		})
	}
}

func TestValidScope(t *testing.T) {
	for s, want := range map[string]bool{
		"buyers.read": true, "payment-methods.write": true, "three-ds-scenarios.write": true,
		"vault-forward-configs.write": true, "*.read": true, "*.write": true, "v2.read": true,
		"": false, "buyers": false, ".read": false, "buyers.": false, "-x.read": false, "2fa.read": false,
		"buyers.Read": false, "buyers_x.read": false, "*.admin": false, "**.read": false,
	} {
		if got := auth.ValidScope(s); got != want {
			t.Errorf("ValidScope(%q) = %v", s, got)
		}
	}
}

func TestRequire(t *testing.T) {
	v := newVerifier(t, auth.Config{})
	principal := func(scopes ...string) *auth.Principal {
		t.Helper()
		p, err := verify(v, mustMint(t, scopes, time.Hour, nil), t0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		p       *auth.Principal
		needed  string
		status  int // 0: allowed
		message string
	}{
		{"has scope", principal("buyers.write"), "buyers.write", 0, ""},
		{"missing scope", principal("buyers.read"), "buyers.write", 403, "missing scope buyers.write"},
		{"other resource", principal("buyers.write"), "payment-methods.write", 403, "missing scope payment-methods.write"},
		{"wildcard", principal("*.write"), "vault-forward.write", 0, ""},
		{"write implies read", principal("transactions.write"), "transactions.read", 0, ""},
		{"no principal", nil, "buyers.read", 401, "missing bearer token"},
		{"needed is a wildcard: programming error", principal("*.write"), "*.write", 500, ""},
		{"needed is malformed: programming error", principal("buyers.write"), "buyers.wirte", 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Require(tt.needed)
			if tt.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantAPIError(t, err, tt.status, tt.message)
		})
	}
}
