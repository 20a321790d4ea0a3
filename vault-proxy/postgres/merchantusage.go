package postgres

import "context"

// Names of what the vault database can hold for a merchant account, as
// MerchantAccountUsage reports them (and GET
// /internal/merchant-accounts/{id}/usage sends them to core-api).
const (
	UsagePaymentMethods         = "payment-methods"               // vaulted cards, gift cards, bank accounts
	UsageNetworkTokens          = "network-tokens"                // live ones: a deleted token is history
	UsageForwardConfigs         = "vault-forward-configs"         // allowed hosts
	UsageForwardAuthentications = "vault-forward-authentications" // sealed credentials
)

// MerchantAccountUsage counts what the vault database still holds for a
// merchant account, by the names above (every name, zero or not), so
// core-api can refuse to delete an account whose secrets would otherwise
// pass to a later account with the same id. The audit trail is history,
// not a holding, and is not counted. One statement, so the counts are of
// one snapshot.
func (db *DB) MerchantAccountUsage(ctx context.Context, merchantAccountID string) (map[string]int64, error) {
	var cards, tokens, configs, auths int64
	err := db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM vaulted_cards WHERE merchant_account_id = $1),
		(SELECT count(*) FROM network_tokens WHERE merchant_account_id = $1 AND status <> 'deleted'),
		(SELECT count(*) FROM forward_configs WHERE merchant_account_id = $1),
		(SELECT count(*) FROM forward_auth_methods WHERE merchant_account_id = $1)`, merchantAccountID).
		Scan(&cards, &tokens, &configs, &auths)
	if err != nil {
		return nil, err
	}
	return map[string]int64{
		UsagePaymentMethods:         cards,
		UsageNetworkTokens:          tokens,
		UsageForwardConfigs:         configs,
		UsageForwardAuthentications: auths,
	}, nil
}
