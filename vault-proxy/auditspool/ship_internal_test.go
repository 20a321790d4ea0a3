package auditspool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
)

// orderSink checks, at every shipment, that each record of the batch was
// in the range of a segment file made durable, and that the file's name
// was durable in the spool directory: the checkpoint
// never gets ahead of the spool on disk, so a power loss cannot leave a
// spool that refuses to start as a stale copy.
type orderSink struct {
	mu         sync.Mutex
	checkpoint uint64
	durable    map[uint64]string // sequence number -> the file it was in at a sync of its range
	named      map[string]bool   // files present at a sync of the directory
	bad        error
}

func (o *orderSink) AuditCheckpoint(context.Context, uuid.UUID) (uint64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.checkpoint, nil
}

func (o *orderSink) ShipAudit(_ context.Context, _ uuid.UUID, b Batch) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b.Prev != o.checkpoint {
		return ErrCheckpointMoved
	}
	for seq := b.Prev + 1; seq <= b.Last; seq++ {
		if f := o.durable[seq]; (f == "" || !o.named[f]) && o.bad == nil {
			o.bad = fmt.Errorf("record %d shipped (batch %d-%d) before its frame (synced: %t) and its file's name (synced: %t) were durable",
				seq, b.Prev+1, b.Last, f != "", o.named[f])
		}
	}
	o.checkpoint = b.Last
	return nil
}

// synced notes the frames wholly inside [lo, hi) of f, which the sync
// made durable.
func (o *orderSink) synced(f *os.File, lo, hi int64) error {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for at := int64(0); ; {
		n, seq, _, err := nextFrame(b)
		if err != nil || n == 0 {
			break
		}
		if at >= lo && at+int64(n) <= hi {
			o.durable[seq] = f.Name()
		}
		b, at = b[n:], at+int64(n)
	}
	return syncRange(f, lo, hi)
}

// syncedDir notes the files the directory holds at its sync.
func (o *orderSink) syncedDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range entries {
		o.named[filepath.Join(dir, e.Name())] = true
	}
	return syncDirectory(dir)
}

func TestFramesAreDurableBeforeTheirCheckpointMoves(t *testing.T) {
	sink := &orderSink{durable: map[uint64]string{}, named: map[string]bool{}}
	// Small segments and batches: batches span segments.
	s, err := Open(t.TempDir(), sink, Options{SegmentSize: 4096, BatchSize: 7, Linger: -1, syncFile: sink.synced, syncDir: sink.syncedDir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 200 {
		if err := s.Record(ctx, vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m",
			Action: "forward", Outcome: "success", RequestID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		if i%37 == 0 {
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.checkpoint != 200 {
		t.Fatalf("checkpoint %d, want 200", sink.checkpoint)
	}
	if sink.bad != nil {
		t.Fatal(sink.bad)
	}
}
