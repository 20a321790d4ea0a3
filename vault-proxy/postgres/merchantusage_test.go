package postgres_test

import (
	"context"
	"maps"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/vault-proxy/forwarding"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// Every kind of record the vault holds for an account is counted, only
// that account's, and a deleted network token (history, its value
// shredded) is not.
func TestMerchantAccountUsageCountsOneAccountsRecords(t *testing.T) {
	db, _ := postgrestest.Open(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	dk := uuid.New()
	if err := db.SaveDataKey(ctx, dk, "vault:v1:wrapped"); err != nil {
		t.Fatal(err)
	}
	card := func(merchant string) uuid.UUID {
		id := uuid.New()
		exec(`INSERT INTO vaulted_cards (id, merchant_account_id, kind, data_key_id, wrapped_record_key, ciphertext, fingerprint, scheme, bin, last4)
			VALUES ($1, $2, 'card', $3, '\x00', '\x00', 'fp', 'visa', '411111', '1111')`, id, merchant, dk)
		return id
	}
	networkToken := func(merchant string, pm uuid.UUID, status string) {
		sealed := []any{dk, []byte{0}, []byte{0}}
		if status == "deleted" {
			sealed = []any{nil, nil, nil}
		}
		exec(`INSERT INTO network_tokens (id, merchant_account_id, payment_method_id, provider, scheme, tsp_reference, status,
			expiration_date, last4, data_key_id, wrapped_record_key, ciphertext)
			VALUES ($1, $2, $3, 'sandbox', 'visa', 'ref', $4, '12/30', '4242', $5, $6, $7)`,
			append([]any{uuid.New(), merchant, pm, status}, sealed...)...)
	}
	config := func(merchant string) uuid.UUID {
		c := &forwarding.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}}
		if err := db.InsertConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	authentication := func(merchant string, config uuid.UUID) {
		exec(`INSERT INTO forward_auth_methods (id, config_id, merchant_account_id, kind, display_name, field_keys, data_key_id, wrapped_record_key, ciphertext)
			VALUES ($1, $2, $3, 'signature', 'a', '{}', $4, '\x00', '\x00')`, uuid.New(), config, merchant, dk)
	}

	acmeCard := card("acme")
	card("acme")
	networkToken("acme", acmeCard, "deleted")
	networkToken("acme", acmeCard, "active")
	authentication("acme", config("acme"))
	config("acme")
	betaCard := card("beta")
	networkToken("beta", betaCard, "active")
	authentication("beta", config("beta"))

	for _, tc := range []struct {
		merchant string
		want     map[string]int64
	}{
		{"acme", map[string]int64{postgres.UsagePaymentMethods: 2, postgres.UsageNetworkTokens: 1, postgres.UsageForwardConfigs: 2, postgres.UsageForwardAuthentications: 1}},
		{"beta", map[string]int64{postgres.UsagePaymentMethods: 1, postgres.UsageNetworkTokens: 1, postgres.UsageForwardConfigs: 1, postgres.UsageForwardAuthentications: 1}},
		{"nobody", map[string]int64{postgres.UsagePaymentMethods: 0, postgres.UsageNetworkTokens: 0, postgres.UsageForwardConfigs: 0, postgres.UsageForwardAuthentications: 0}},
	} {
		t.Run(tc.merchant, func(t *testing.T) {
			got, err := db.MerchantAccountUsage(ctx, tc.merchant)
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
