package testsupport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/testsupport"
)

// A dump shows bytea in escape form: a card number stored as ASCII in a
// bytea is readable digits for the scans, and random bytes do not read as
// long digit runs (in hex form, one value in a few thousand did).
func TestDumpShowsByteaInEscapeForm(t *testing.T) {
	dbs := testsupport.NewTestDatabases(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbs.VaultOwnerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE dumped (b bytea); INSERT INTO dumped VALUES ('\x00ff34313131313131313131313131313131'::bytea)`); err != nil {
		t.Fatal(err)
	}
	dump := dbs.Dump(t, dbs.Vault.Name)
	if !strings.Contains(dump, `'\000\3774111111111111111'`) {
		t.Fatalf("the bytea is not in escape form:\n%s", dump)
	}
}
