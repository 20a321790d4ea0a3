package postgres

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/pgdb"
	"github.com/payorch/shared/testsupport"
)

// An anti-fraud payment service configured before the migration that
// brought the v10.2 toggle (019) stays on v2.1 after it, until its
// api_version is set; setting one service's leaves another's alone.
func TestAntiFraudServicesStayOnV21AcrossTheMigration(t *testing.T) {
	ctx := context.Background()
	dbs := testsupport.NewTestDatabases(t)
	before := fstest.MapFS{}
	err := fs.WalkDir(migrations, "migrations", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Compare(d.Name(), "019") >= 0 {
			return err
		}
		b, err := fs.ReadFile(migrations, p)
		before[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	old := schema
	old.FS = before
	if err := pgdb.Migrate(ctx, dbs.CoreOwnerDSN, old); err != nil {
		t.Fatal(err)
	}
	owner, err := pgx.Connect(ctx, dbs.CoreOwnerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, `INSERT INTO merchant_accounts (id, display_name) VALUES ('other', 'Other')`); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{"default": "6f1c2e7a-0b7e-4b8e-9d55-0c6f1d2a3b41", "other": "6f1c2e7a-0b7e-4b8e-9d55-0c6f1d2a3b42"}
	for m, id := range ids {
		if _, err := owner.Exec(ctx, `INSERT INTO payment_services (id, merchant_account_id, connector, method, active, is_default,
				settings, credentials_ciphertext, credential_fields)
			VALUES ($1, $2, 'mock-antifraud', 'anti-fraud', true, true, '{"fail_open": true}', 'vault:v1:c2VjcmV0', '{api_key}')`, id, m); err != nil {
			t.Fatal(err)
		}
	}

	if err := Migrate(ctx, dbs.CoreOwnerDSN); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, dbs.CoreDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	version := func(m string) string {
		t.Helper()
		ps, err := db.PaymentService(ctx, m, ids[m])
		if err != nil {
			t.Fatal(err)
		}
		var v coreapi.Problems
		settings := connector.MockAntiFraud{}.Schemas().Settings.Validate("/settings", ps.Settings, &v)
		if err := v.Err(); err != nil {
			t.Fatalf("stored settings no longer valid: %v", err)
		}
		return connector.AntiFraudVersion(settings)
	}
	if a, b := version("default"), version("other"); a != connector.AntiFraudV21 || b != connector.AntiFraudV21 {
		t.Fatalf("after the migration: %s, %s; want v2.1 for both", a, b)
	}
	if _, err := owner.Exec(ctx, `UPDATE payment_services SET settings = '{"api_version": "v10.2"}' WHERE id = $1`, ids["default"]); err != nil {
		t.Fatal(err)
	}
	if a, b := version("default"), version("other"); a != connector.AntiFraudV102 || b != connector.AntiFraudV21 {
		t.Fatalf("after the toggle: %s, %s; want v10.2 and v2.1", a, b)
	}
}
