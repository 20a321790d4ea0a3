package postgres_test

import (
	"context"
	"testing"

	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// A key's lock is held by one caller at a time, across connections, and
// free again once unlocked; other keys are not affected.
func TestTryLockKey(t *testing.T) {
	db, _ := postgrestest.Open(t)
	ctx := context.Background()
	unlock, ok, err := db.TryLockKey(ctx, "m1|k1")
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, err := db.TryLockKey(ctx, "m1|k1"); err != nil || ok {
		t.Fatalf("second lock of a held key: %v %v", ok, err)
	}
	other, ok, err := db.TryLockKey(ctx, "m1|k2")
	if err != nil || !ok {
		t.Fatalf("another key: %v %v", ok, err)
	}
	other()
	unlock()
	again, ok, err := db.TryLockKey(ctx, "m1|k1")
	if err != nil || !ok {
		t.Fatalf("after unlock: %v %v", ok, err)
	}
	again()
	if n := db.Pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still acquired", n)
	}
}
