package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// `vault-proxy audit verify` passes an untouched trail and prints its
// head, fails on an edited record naming it, and checks the anchors it is
// given.
func TestAuditVerify(t *testing.T) {
	ctx := context.Background()
	db, dbs := postgrestest.Open(t)
	events := make([]vaultproxy.AuditEvent, 3)
	for i := range events {
		events[i] = vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m", Action: "forward", Outcome: "success"}
	}
	b, err := auditspool.EncodeBatch(0, events...)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ShipAudit(ctx, uuid.New(), b); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VAULT_PROXY_DATABASE_URL", dbs.VaultDSN)
	verify := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := auditCmd(ctx, append([]string{"verify"}, args...), &out)
		return out.String(), err
	}

	out, err := verify()
	if err != nil || !strings.Contains(out, "audit chain verified: 3 records") {
		t.Fatalf("an untouched trail: %q, %v", out, err)
	}
	head := out[strings.LastIndex(out, " ")+1 : len(out)-1]
	if _, err := verify("-anchor", head); err != nil {
		t.Fatalf("verify against the head it printed (%s): %v", head, err)
	}
	if _, err := verify("-anchor", "2:00"); err == nil || !strings.Contains(err.Error(), "ID:HASH") {
		t.Fatalf("a malformed anchor: %v", err)
	}

	dbs.ExecAsOwner(t, dbs.Vault, `UPDATE audit_events SET outcome = 'failure: hidden' WHERE id = 2`)
	_, err = verify()
	var broken *postgres.AuditChainBreak
	if !errors.As(err, &broken) || broken.ID != 2 || !strings.Contains(err.Error(), "record 2") {
		t.Fatalf("an edited record 2: %v", err)
	}
}
