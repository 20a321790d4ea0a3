package app

import (
	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/merchants"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/pagination"
)

// deps builds the services the routes call, on the core database and
// vault-proxy's internal listener.
func (m *Main) deps(verifier *auth.Verifier, cursors *pagination.Codec) httpapi.Deps {
	return httpapi.Deps{
		Log:         m.Log,
		DB:          m.DB,
		Auth:        &httpapi.Auth{Verifier: verifier, Exists: m.DB.MerchantAccountExists},
		Vault:       m.VaultProxy,
		Environment: m.Config.Environment,
		Cursors:     cursors,

		MerchantAccounts: &merchants.Service{Store: postgres.MerchantsStore{DB: m.DB}, VaultProxy: m.VaultProxy, Log: m.Log},
		Buyers:           &buyers.Service{Store: m.DB},
	}
}
