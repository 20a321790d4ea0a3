// Package vaultingtest builds the card vault on real parts for tests: fresh
// databases, a fresh transit mount of the real Vault, an audit spool.
package vaultingtest

import (
	"context"
	"testing"
	"time"

	"github.com/payorch/shared/testsupport"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/tokenizer/transit/transittest"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/auditspool/auditspooltest"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
	"github.com/payorch/vault-proxy/vaulting"
)

// Parts is a card vault and what it is built from.
type Parts struct {
	DB      *postgres.DB
	DBs     *testsupport.Databases
	Transit *transit.Client // the real Vault's transit, with vault-proxy's policy
	Key     []byte          // the fingerprint key
	Sealer  *envelope.Sealer
	Audits  *auditspool.Spool
	Codes   *vaulting.SecurityCodes // 15 minutes
	Service *vaulting.Service
}

// New builds the parts; now is the service's clock (nil: time.Now).
func New(tb testing.TB, now func() time.Time) *Parts {
	tb.Helper()
	db, dbs := postgrestest.Open(tb)
	env := transittest.New(tb)
	key, err := env.Service.HMACKey(context.Background(), transit.FingerprintKey)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Parts{DB: db, DBs: dbs, Transit: env.Service, Key: key, Codes: vaulting.NewSecurityCodes(15 * time.Minute)}
	p.Sealer = envelope.New(env.Service, db, envelope.Config{TransitKey: transit.CardKey})
	p.Audits = auditspooltest.Open(tb, db)
	p.Service = vaulting.New(db, p.Audits, p.Sealer, key, p.Codes, now)
	return p
}
