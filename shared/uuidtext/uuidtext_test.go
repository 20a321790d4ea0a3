package uuidtext

import (
	"testing"

	"github.com/google/uuid"
)

func TestAppendMatchesUUIDString(t *testing.T) {
	ids := []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e")}
	for range 1000 {
		ids = append(ids, uuid.New())
	}
	for _, id := range ids {
		if got := string(Append([]byte("x"), id)); got != "x"+id.String() {
			t.Fatalf("Append(%s) = %s", id, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Append(make([]byte, 0, 64)[:0], ids[2]) }); n > 1 {
		t.Fatalf("%v allocations, want only the caller's buffer", n)
	}
}
