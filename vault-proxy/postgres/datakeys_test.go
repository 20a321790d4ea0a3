package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/postgres"
)

// The sealer removes a data key it stored but could not unwrap through
// this method.
var _ envelope.KeyDeleter = (*postgres.DB)(nil)

// A data key no record refers to is removed; one that a record refers to
// is kept by the foreign key, whatever a caller asks.
func TestDeleteDataKey(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	unused := uuid.New()
	if err := db.SaveDataKey(ctx, unused, "vault:v1:AAAA"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteDataKey(ctx, unused); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadDataKey(ctx, unused); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("after delete: %v, want not found", err)
	}

	used := uuid.New()
	if err := db.SaveDataKey(ctx, used, "vault:v1:BBBB"); err != nil {
		t.Fatal(err)
	}
	// A vaulted card sealed under it (the row as InsertCard would store it).
	if _, err := db.Pool.Exec(ctx, `INSERT INTO vaulted_cards (id, merchant_account_id, kind, data_key_id, wrapped_record_key, ciphertext, fingerprint, scheme, bin, last4)
		VALUES ($1, 'm', 'card', $2, '\x00', '\x00', 'f', 'visa', '411111', '1111')`, uuid.New(), used); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteDataKey(ctx, used); err == nil {
		t.Fatal("a data key in use was deleted")
	}
	if _, err := db.LoadDataKey(ctx, used); err != nil {
		t.Fatalf("the key in use: %v", err)
	}
}
