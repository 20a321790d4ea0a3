package postgres_test

import (
	"context"
	"maps"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/vault-proxy/forwarding"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/postgres"
)

// Every kind of record the vault holds for an account is counted, only
// that account's, and a deleted network token (history, its value
// shredded) is not.
func TestMerchantAccountUsageCountsOneAccountsRecords(t *testing.T) {
	r := newVaultRows(t)
	db, ctx := r.db, context.Background()
	config := func(merchant string) uuid.UUID {
		c := &forwarding.Config{ID: uuid.New(), MerchantAccountID: merchant, DisplayName: "c", Hosts: []string{"a.example"}}
		if err := db.InsertConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	authentication := func(merchant string, config uuid.UUID) {
		r.exec(`INSERT INTO forward_auth_methods (id, config_id, merchant_account_id, kind, display_name, field_keys, data_key_id, wrapped_record_key, ciphertext)
			VALUES ($1, $2, $3, 'signature', 'a', '{}', $4, '\x00', '\x00')`, uuid.New(), config, merchant, r.dk)
	}

	acmeCard := r.card("acme")
	r.card("acme")
	r.networkToken("acme", acmeCard, networktoken.StatusDeleted)
	r.networkToken("acme", acmeCard, networktoken.StatusActive)
	authentication("acme", config("acme"))
	config("acme")
	betaCard := r.card("beta")
	r.networkToken("beta", betaCard, networktoken.StatusActive)
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
