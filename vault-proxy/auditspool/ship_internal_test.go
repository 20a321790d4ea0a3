package auditspool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
)

// memSink stores batches in memory, in order, or refuses them while down.
type memSink struct {
	mu         sync.Mutex
	checkpoint uint64
	down       bool
	inspect    func(Batch) // when set, sees each batch (mu held) before it is stored
}

func (m *memSink) AuditCheckpoint(context.Context, uuid.UUID) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkpoint, nil
}

func (m *memSink) ShipAudit(_ context.Context, _ uuid.UUID, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("the database is down")
	}
	if b.Prev != m.checkpoint {
		return ErrCheckpointMoved
	}
	if m.inspect != nil {
		m.inspect(b)
	}
	m.checkpoint = b.Last
	return nil
}

// orderSink checks, at every shipment, that each record of the batch was
// in the range of a segment file made durable, and that the file's name
// was durable in the spool directory: the checkpoint never gets ahead of
// the spool on disk, so a power loss cannot leave a spool that refuses to
// start as a stale copy.
type orderSink struct {
	memSink
	durable map[uint64]string // sequence number -> the file it was in at a sync of its range
	named   map[string]bool   // files present at a sync of the directory
	bad     error
}

func newOrderSink() *orderSink {
	o := &orderSink{durable: map[uint64]string{}, named: map[string]bool{}}
	o.inspect = o.check
	return o
}

// check runs with mu held, before the checkpoint moves.
func (o *orderSink) check(b Batch) {
	for seq := b.Prev + 1; seq <= b.Last; seq++ {
		if f := o.durable[seq]; (f == "" || !o.named[f]) && o.bad == nil {
			o.bad = fmt.Errorf("record %d shipped (batch %d-%d) before its frame (synced: %t) and its file's name (synced: %t) were durable",
				seq, b.Prev+1, b.Last, f != "", o.named[f])
		}
	}
}

// synced notes the frames wholly inside [lo, hi) of f, which the sync
// made durable.
func (o *orderSink) synced(f *os.File, lo, hi int64) error {
	// The file's name now, not f.Name(): a segment made as the standby
	// was renamed into place after it was opened.
	name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return err
	}
	b, err := os.ReadFile(name)
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
			o.durable[seq] = name
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
	sink := newOrderSink()
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

// A batch that fails to read part-way (the next segment cannot be opened
// for a while: too many open files, say) is read again from the shipped
// position once it can be, rather than the shipper staying stuck with a
// half-used reader until a restart.
func TestShipperRecoversFromAFailedRead(t *testing.T) {
	dir := t.TempDir()
	sink := &memSink{down: true} // nothing ships until every record is written
	s, err := Open(dir, sink, Options{SegmentSize: 2048, BatchSize: 100, Linger: -1, RetryMin: 20 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 12 {
		if err := s.Record(ctx, vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m",
			Action: "forward", Outcome: "success", RequestID: fmt.Sprintf("request-%03d-%s", i, strings.Repeat("x", 80))}); err != nil {
			t.Fatal(err)
		}
	}
	// The newest segment goes away, the database comes back: the
	// shipper's reads take the first segment's frames, then fail to open
	// the newest, for a while; then it comes back.
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	// Exactly two: the reader must have been in the first when the open
	// of the second failed.
	if len(segs) != 2 {
		t.Fatalf("%d segments; the batch must span exactly two", len(segs))
	}
	newest := segs[len(segs)-1]
	if err := os.Rename(newest, newest+".away"); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	sink.down = false
	sink.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	if err := os.Rename(newest+".away", newest); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Flush(fctx); err != nil {
		t.Fatalf("flush after the segment came back: %v", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.checkpoint != 12 {
		t.Fatalf("checkpoint %d, want 12", sink.checkpoint)
	}
}

// A segment retired at a roll is made durable when it is sealed, shipped
// or not: a machine crash soon after a roll must not keep the next
// segment's name and lose this one's tail (Open would then find records
// missing between the two and refuse to start). Here nothing ships (the
// database is down), and every record of the sealed segments is synced.
func TestSealedSegmentsAreDurableBeforeShipping(t *testing.T) {
	syncs := newOrderSink()
	dir := t.TempDir()
	s, err := Open(dir, &memSink{down: true}, Options{SegmentSize: 2048, BatchSize: 5, RetryMin: time.Second, DrainTimeout: 50 * time.Millisecond, syncFile: syncs.synced})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 30 {
		if err := s.Record(context.Background(), vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m",
			Action: "forward", Outcome: "success", RequestID: fmt.Sprintf("request-%03d-%s", i, strings.Repeat("x", 80))}); err != nil {
			t.Fatal(err)
		}
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	// Every record of every segment but the active one, once the preparer
	// has sealed them.
	var sealed []uint64
	for _, seg := range segs[:len(segs)-1] {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for {
			n, seq, _, err := nextFrame(b)
			if err != nil || n == 0 {
				break
			}
			sealed = append(sealed, seq)
			b = b[n:]
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, seq := range sealed {
		for {
			syncs.mu.Lock()
			done := syncs.durable[seq] != ""
			syncs.mu.Unlock()
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("record %d of a sealed segment was never synced", seq)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
