package postgres

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A key's lock is exclusive, waited for until the context ends, handed to
// a waiter on unlock, and forgotten once no one holds or waits for it.
func TestKeyedLocks(t *testing.T) {
	var k keyedLocks
	ctx := context.Background()
	unlock, err := k.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := k.lock(ctx, "b")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := k.lock(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a held key: %v, want the context's end", err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := k.lock(ctx, "a")
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		got <- u
	}()
	unlock()
	(<-got)()
	if len(k.m) != 0 {
		t.Fatalf("%d locks kept", len(k.m))
	}
}
