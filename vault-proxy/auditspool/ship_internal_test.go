package auditspool

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
)

// orderSink checks, at every shipment, that each record of the batch was
// in a segment file when that file was last made durable: the checkpoint
// never gets ahead of the spool on disk, so a power loss cannot leave a
// spool that refuses to start as a stale copy.
type orderSink struct {
	mu         sync.Mutex
	checkpoint uint64
	durable    map[uint64]bool // sequence numbers in a file at its last sync
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
		if !o.durable[seq] && o.bad == nil {
			o.bad = fmt.Errorf("record %d shipped (batch %d-%d) before its segment was synced", seq, b.Prev+1, b.Last)
		}
	}
	o.checkpoint = b.Last
	return nil
}

// synced notes the frames in f, which its sync made durable.
func (o *orderSink) synced(f *os.File) error {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		n, seq, _, err := nextFrame(b)
		if err != nil || n == 0 {
			break
		}
		o.durable[seq] = true
		b = b[n:]
	}
	return fdatasync(f)
}

func TestFramesAreDurableBeforeTheirCheckpointMoves(t *testing.T) {
	sink := &orderSink{durable: map[uint64]bool{}}
	// Small segments and batches: batches span segments.
	s, err := Open(t.TempDir(), sink, Options{SegmentSize: 4096, BatchSize: 7, Linger: -1, syncFile: sink.synced})
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
