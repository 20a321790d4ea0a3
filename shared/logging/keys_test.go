package logging

import "testing"

func TestIsSensitiveKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"password", true},
		{"DB_PASSWORD", true},
		{"client_secret", true},
		{"access_token", true},
		{"Authorization", true},
		{"Proxy-Authorization", true},
		{"Set-Cookie", true},
		{"api_key", true},
		{"X-Api-Key", true},
		{"apiKey", true},
		{"private_key", true},
		{"cvv", true},
		{"CVC2", true},
		{"security_code", true},
		{"securityCode", true},
		{"pan", true},
		{"PAN", true},
		{"card_pan", true},
		{"cardPAN", true},
		{"PANHash", true},
		{"card_number", true},
		{"cardNumber", true},
		{"account_number", true},
		{"number", true},
		{"Number", true},
		{"pin", true},
		{"pin_block", true},
		{"key", true},
		{"track2", true},
		{"hmac_key", true},
		{"signingKey", true},
		{"data_key", true},
		{"private_key_pem", true},
		{"api_key_id", true},
		{"network_token", true},

		{"", false},
		{"company", false},
		{"span_id", false},
		{"expand", false},
		{"shipping", false},
		{"mapping", false},
		{"order_number", false},
		{"phone_number", false},
		{"idempotency_key", false},
		{"key_id", false},
		{"cvv_response_code", false},
		{"amount", false},
		{"request_id", false},
		{"label", false},
		{"authorization_code", false},
		{"authorization_id", false},
		{"public_key", false},
		{"jwtPublicKey", false},
		{"Idempotency-Key", false},
		{"keys_loaded", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := IsSensitiveKey(tt.key); got != tt.want {
				t.Errorf("IsSensitiveKey(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func TestIsSensitiveKeyDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { IsSensitiveKey("merchant_account_id") }); n != 0 {
		t.Errorf("IsSensitiveKey allocated %v times", n)
	}
}
