package auditspool_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// openDB gives a test a fresh vault database.
func openDB(t *testing.T) *postgres.DB {
	t.Helper()
	db, _ := postgrestest.Open(t)
	return db
}

// outage is the real database behind a switch that makes it unreachable,
// the way a PostgreSQL restart or a network partition looks to the
// shipper.
type outage struct {
	*postgres.DB
	down  atomic.Bool
	calls atomic.Int64
}

var errDown = errors.New("connection refused (outage)")

func (o *outage) AuditCheckpoint(ctx context.Context, id uuid.UUID) (uint64, error) {
	if o.down.Load() {
		return 0, errDown
	}
	return o.DB.AuditCheckpoint(ctx, id)
}

func (o *outage) ShipAudit(ctx context.Context, id uuid.UUID, b auditspool.Batch) error {
	o.calls.Add(1)
	if o.down.Load() {
		return errDown
	}
	return o.DB.ShipAudit(ctx, id, b)
}

func event(rid string, i int) vaultproxy.AuditEvent {
	return vaultproxy.AuditEvent{Actor: "tok_1", MerchantAccountID: "m1", Action: "forward", Purpose: "vault-forward",
		Tokens: []uuid.UUID{uuid.New(), uuid.New()}, Outcome: "success", RequestID: rid,
		Detail: map[string]any{"placeholders": []string{"CARD_NUMBER_1"}, "host": "api.example", "i": i}}
}

func open(t *testing.T, dir string, sink auditspool.Sink, o auditspool.Options) *auditspool.Spool {
	t.Helper()
	s, err := auditspool.Open(dir, sink, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func flush(t *testing.T, s *auditspool.Spool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// stored returns how many times each request id is in audit_events.
func stored(t *testing.T, db *postgres.DB) map[string]int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT request_id, count(*) FROM audit_events GROUP BY request_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var rid string
		var n int
		if err := rows.Scan(&rid, &n); err != nil {
			t.Fatal(err)
		}
		out[rid] = n
	}
	return out
}

// wantExactlyOnce fails unless every id in rids is stored once and nothing
// else is stored.
func wantExactlyOnce(t *testing.T, db *postgres.DB, rids []string) {
	t.Helper()
	got := stored(t, db)
	for _, rid := range rids {
		if got[rid] != 1 {
			t.Fatalf("record %s stored %d times, want once", rid, got[rid])
		}
	}
	if len(got) != len(rids) {
		t.Fatalf("%d distinct records stored, want %d", len(got), len(rids))
	}
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Concurrent records, spread over many segments, all reach the database
// once, with their fields, in the order they were spooled; shipped
// segments are deleted.
func TestConcurrentRecordsAreShippedOnceInOrder(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	s := open(t, dir, db, auditspool.Options{SegmentSize: 4 << 10, BatchSize: 37})
	defer s.Close()

	const writers, each = 16, 125
	var wg sync.WaitGroup
	rids := make([]string, 0, writers*each)
	var mu sync.Mutex
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rid := fmt.Sprintf("w%02d-%03d", w, i)
				if err := s.Record(context.Background(), event(rid, i)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				rids = append(rids, rid)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	flush(t, s)
	wantExactlyOnce(t, db, rids)
	if s.Backlog() != 0 {
		t.Fatalf("backlog %d after flush", s.Backlog())
	}

	// Each writer's records are stored in the order it wrote them, with
	// the detail and time they were spooled with.
	rows, err := db.Pool.Query(context.Background(), `SELECT request_id, detail->>'i', detail->>'host', occurred_at, cardinality(tokens) FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int{}
	for rows.Next() {
		var rid, i, host string
		var at time.Time
		var ntok int
		if err := rows.Scan(&rid, &i, &host, &at, &ntok); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(i)
		w := rid[:3]
		if prev, ok := last[w]; ok && n <= prev {
			t.Fatalf("%s stored after record %d of the same writer", rid, prev)
		}
		last[w] = n
		if host != "api.example" || ntok != 2 || time.Since(at) > time.Minute {
			t.Fatalf("%s stored with host %q, %d tokens, at %v", rid, host, ntok, at)
		}
	}
	rows.Close()
	if n := len(segments(t, dir)); n > 2 {
		t.Fatalf("%d segment files left after everything was shipped, want the active one (and at most one being dropped)", n)
	}
}

// While the database is down, records are taken at full speed and kept;
// Flush says why it cannot finish; once the database is back they are
// shipped, once each.
func TestDatabaseOutageLosesNothing(t *testing.T) {
	db := openDB(t)
	sink := &outage{DB: db}
	s := open(t, t.TempDir(), sink, auditspool.Options{RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	defer s.Close()
	sink.down.Store(true)

	rids := recordN(t, s, "outage-", 300)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := s.Flush(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "outage") {
		t.Fatalf("flush during the outage: %v, want a deadline naming the last failure", err)
	}
	if s.Backlog() != 300 {
		t.Fatalf("backlog %d during the outage, want 300", s.Backlog())
	}
	sink.down.Store(false)
	flush(t, s)
	wantExactlyOnce(t, db, rids)
}

// A spool closed before it could ship keeps its records on disk; the next
// start ships them. A copy of the directory (a restored backup, a volume
// attached to a second instance) cannot store them a second time: the
// checkpoint is shared through the database, and a copy that has fallen
// behind it is refused, since its new records would be numbered as
// already stored.
func TestRestartShipsWhatWasLeftAndCopiesCannotDuplicate(t *testing.T) {
	db := openDB(t)
	sink := &outage{DB: db}
	dir := t.TempDir()
	s := open(t, dir, sink, auditspool.Options{SegmentSize: 2 << 10, DrainTimeout: 50 * time.Millisecond})
	sink.down.Store(true)
	rids := recordN(t, s, "restart-", 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(s.Record(context.Background(), event("late", 0)), auditspool.ErrClosed) || !errors.Is(s.Writable(), auditspool.ErrClosed) {
		t.Fatal("a closed spool still takes records")
	}
	clone := t.TempDir()
	copyDir(t, dir, clone)

	s2 := open(t, dir, db, auditspool.Options{})
	flush(t, s2)
	wantExactlyOnce(t, db, rids)
	_ = s2.Close()

	s3 := open(t, clone, db, auditspool.Options{})
	flush(t, s3)
	wantExactlyOnce(t, db, rids)
	if err := s3.Record(context.Background(), event("from-the-copy", 0)); err != nil {
		t.Fatal(err)
	}
	flush(t, s3)
	_ = s3.Close()
	wantExactlyOnce(t, db, append(rids, "from-the-copy"))

	if _, err := auditspool.Open(dir, db, auditspool.Options{}); err == nil || !strings.Contains(err.Error(), "stale copy") {
		t.Fatalf("open of a directory behind its checkpoint: %v, want a refusal", err)
	}
}

// Only one process may use a spool directory.
func TestOneProcessPerDirectory(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	s := open(t, dir, db, auditspool.Options{})
	defer s.Close()
	if _, err := auditspool.Open(dir, db, auditspool.Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of a spool in use: %v", err)
	}
}

// A torn record at the end of the newest segment is cut off. Records
// missing anywhere else (a damaged frame, an older segment's unsynced
// tail, a removed segment) are replaced by loss markers with their
// sequence numbers: the spool starts, ships everything else once, and a
// restart adds no second marker. Records missing that the database already
// holds are refused.
func TestTornTailIsCutMissingRecordsAreMarkedLost(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, segs []string)
		lost   int // markers expected; -1: at least one
	}{
		{"half a frame at the end", func(t *testing.T, segs []string) {
			appendBytes(t, segs[len(segs)-1], []byte{0, 0, 1, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0})
		}, 0},
		{"a whole frame with a bad checksum at the end", func(t *testing.T, segs []string) {
			flipLastByte(t, segs[len(segs)-1]) // cut as torn: its number is used again
		}, 0},
		{"zeros at the end (extended but never written)", func(t *testing.T, segs []string) {
			appendBytes(t, segs[len(segs)-1], make([]byte, 64))
		}, 0},
		{"an older segment's last record damaged", func(t *testing.T, segs []string) {
			flipLastByte(t, segs[0])
		}, 1},
		{"an older segment's first record damaged", func(t *testing.T, segs []string) {
			flipByte(t, segs[1], 20)
		}, 1},
		{"an older segment's unsynced tail (zeros after a crash)", func(t *testing.T, segs []string) {
			zeroTail(t, segs[1])
		}, -1},
		{"a middle segment removed", func(t *testing.T, segs []string) {
			if err := os.Remove(segs[2]); err != nil {
				t.Fatal(err)
			}
		}, -1},
		{"the oldest segment removed", func(t *testing.T, segs []string) {
			if err := os.Remove(segs[0]); err != nil {
				t.Fatal(err)
			}
		}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			sink := &outage{DB: db}
			dir := t.TempDir()
			s := open(t, dir, sink, auditspool.Options{SegmentSize: 1 << 10, DrainTimeout: time.Millisecond})
			sink.down.Store(true)
			for i := range 40 {
				if err := s.Record(context.Background(), event(fmt.Sprintf("torn-%02d", i), i)); err != nil {
					t.Fatal(err)
				}
			}
			_ = s.Close()
			segs := segments(t, dir)
			if len(segs) < 4 {
				t.Fatalf("want several segments, got %d", len(segs))
			}
			tc.damage(t, segs)

			// Opened once by a sink that stores nothing (nothing was
			// shipped yet), then again: the repair is done once.
			s1 := open(t, dir, refusing{}, auditspool.Options{DrainTimeout: time.Millisecond})
			_ = s1.Close()
			sink.down.Store(false)
			s2 := open(t, dir, sink, auditspool.Options{})
			defer s2.Close()
			if err := s2.Record(context.Background(), event("after", 0)); err != nil {
				t.Fatal(err)
			}
			flush(t, s2)

			got := stored(t, db)
			markers := lostSequences(t, db)
			if (tc.lost >= 0 && len(markers) != tc.lost) || (tc.lost < 0 && len(markers) == 0) {
				t.Fatalf("%d loss markers %v, want %d", len(markers), markers, tc.lost)
			}
			if got["after"] != 1 || got[""] != len(markers) {
				t.Fatalf("stored %v with %d markers", got, len(markers))
			}
			// Each of the 40 is stored once or marked lost, never both; a
			// torn tail is the exception, cut before any number was used.
			for i := range 40 {
				rid, seq := fmt.Sprintf("torn-%02d", i), uint64(i+1)
				if got[rid]+markers[seq] > 1 {
					t.Fatalf("record %d stored %d times and marked %d times", seq, got[rid], markers[seq])
				}
				if got[rid]+markers[seq] == 0 && !(i == 39 && strings.Contains(tc.name, "bad checksum at the end")) {
					t.Fatalf("record %d neither stored nor marked lost", seq)
				}
			}
		})
	}
}

// Records missing that the database already holds cost nothing: a
// damaged frame of a shipped record, or a copy of the directory taken
// before shipping with a shipped segment gone, opens, marks nothing as
// lost, and goes on numbering after the last record.
func TestMissingShippedRecordsCostNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir, before string) string // returns the directory to open
	}{
		{"a shipped record damaged", func(t *testing.T, dir, _ string) string {
			flipByte(t, segments(t, dir)[0], 20)
			return dir
		}},
		{"a copy missing a shipped segment", func(t *testing.T, _, before string) string {
			if err := os.Remove(segments(t, before)[1]); err != nil {
				t.Fatal(err)
			}
			return before
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			sink := &outage{DB: db}
			dir, before := t.TempDir(), t.TempDir()
			s := open(t, dir, sink, auditspool.Options{SegmentSize: 1 << 10})
			sink.down.Store(true)
			var rids []string
			for i := range 20 {
				rids = append(rids, fmt.Sprintf("kept-%02d", i))
				if err := s.Record(context.Background(), event(rids[i], i)); err != nil {
					t.Fatal(err)
				}
			}
			copyDir(t, dir, before) // a copy taken before shipping
			sink.down.Store(false)
			flush(t, s)
			_ = s.Close()

			s2 := open(t, tc.damage(t, dir, before), db, auditspool.Options{})
			defer s2.Close()
			if err := s2.Record(context.Background(), event("after", 0)); err != nil {
				t.Fatal(err)
			}
			flush(t, s2)
			wantExactlyOnce(t, db, append(rids, "after"))
			if n := len(lostSequences(t, db)); n != 0 {
				t.Fatalf("%d loss markers stored for records the database holds", n)
			}
		})
	}
}

// lostSequences returns how often each sequence number has a loss marker.
func lostSequences(t *testing.T, db *postgres.DB) map[uint64]int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT detail->>'sequence' FROM audit_events WHERE action = $1 AND merchant_account_id = $2`,
		auditspool.LostAction, auditspool.LostMerchant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[uint64]int{}
	for rows.Next() {
		var seq string
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseUint(seq, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[n]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) <= at {
		t.Fatalf("read %s: %v", path, err)
	}
	b[at] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// zeroTail zeroes the second half of a segment, as its pages look when
// they never reached the disk.
func zeroTail(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[len(b)/2:])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func flipLastByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		t.Fatalf("read %s: %v", path, err)
	}
	b[len(b)-2] ^= 0xff // inside the JSON payload, before its closing brace
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A vault-proxy killed with SIGKILL while it writes records loses none of
// those it had been told were written: a child process records as fast as
// it can and prints each request id once Record returns; the test kills
// it mid-stream, opens its spool and finds every printed id in the
// database, once.
func TestKilledWriterLosesNoAcknowledgedRecord(t *testing.T) {
	if dir := os.Getenv("AUDITSPOOL_CHILD_DIR"); dir != "" {
		childWriter(dir)
		return
	}
	db := openDB(t)
	dir := t.TempDir()
	cmd, sc := startChild(t, "AUDITSPOOL_CHILD_DIR", dir)
	var acked []string
	for sc.Scan() && len(acked) < 3000 {
		if rid, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
			acked = append(acked, rid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < 3000 {
		t.Fatalf("the child acknowledged only %d records", len(acked))
	}

	s := open(t, dir, db, auditspool.Options{})
	defer s.Close()
	flush(t, s)
	got := stored(t, db)
	for _, rid := range acked {
		if got[rid] != 1 {
			t.Fatalf("acknowledged record %s stored %d times after the kill, want once", rid, got[rid])
		}
	}
	t.Logf("%d acknowledged, %d stored (records written after the last read acknowledgement count too)", len(acked), len(got))
}

// recordN records n events whose request ids are prefix0, prefix1, ...
// and returns those ids.
func recordN(t *testing.T, s *auditspool.Spool, prefix string, n int) []string {
	t.Helper()
	rids := make([]string, 0, n)
	for i := range n {
		rid := prefix + strconv.Itoa(i)
		if err := s.Record(context.Background(), event(rid, i)); err != nil {
			t.Fatalf("record %s: %v", rid, err)
		}
		rids = append(rids, rid)
	}
	return rids
}

// startChild starts childTest and returns it with a scanner over its
// standard output, where the child prints what it acknowledged.
func startChild(t *testing.T, env, dir string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := childTest(t, env, dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

// childTest runs the calling test again in a child process of the test
// binary, with env set to dir: the child's part of a test that must kill a
// process or change its limits.
func childTest(t *testing.T, env, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), env+"="+dir)
	return cmd
}

// childWriter is the killed process: its sink takes no batch, so every
// record is still only in the spool files when it dies.
func childWriter(dir string) {
	s, err := auditspool.Open(dir, refusing{}, auditspool.Options{SegmentSize: 64 << 10})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		rid := "kill-" + strconv.Itoa(i)
		if err := s.Record(context.Background(), event(rid, i)); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Fprintln(w, "ACK", rid)
		if i%50 == 0 {
			_ = w.Flush()
		}
	}
}

type refusing struct{}

func (refusing) AuditCheckpoint(context.Context, uuid.UUID) (uint64, error)   { return 0, nil }
func (refusing) ShipAudit(context.Context, uuid.UUID, auditspool.Batch) error { return errDown }

// BenchmarkRecord is the cost a request pays for its audit record.
func BenchmarkRecord(b *testing.B) {
	s, err := auditspool.Open(b.TempDir(), refusing{}, auditspool.Options{DrainTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := event("bench", 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Record(context.Background(), e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRecordForward is Record with the event a /vault-forward writes
// (forward's BenchmarkAuditOutcome adds building its detail).
func BenchmarkRecordForward(b *testing.B) {
	s, err := auditspool.Open(b.TempDir(), refusing{}, auditspool.Options{RetryMin: time.Hour, DrainTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := vaultproxy.AuditEvent{Actor: "0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", MerchantAccountID: "default", Action: "forward",
		Tokens: []uuid.UUID{uuid.New(), uuid.New()}, Purpose: "vault-forward", Outcome: "success", RequestID: "req-0192f1c4",
		Detail: map[string]any{"authentications": []string{uuid.NewString()},
			"placeholders": []string{"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_1", "CARD_EXPIRATION_DATE_YY_1", "CARD_SECURITY_CODE_1"},
			"host":         "127.0.0.1:8443", "method": "POST", "duration_ms": int64(3), "status": 200}}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Record(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
}

// The shipper waits a little for a batch to fill rather than commit every
// record on its own, and a reader that flushes does not wait for that.
func TestShipperBatchesButFlushDoesNotWait(t *testing.T) {
	db := openDB(t)
	sink := &outage{DB: db}
	s := open(t, t.TempDir(), sink, auditspool.Options{Linger: time.Hour})
	defer s.Close()
	rids := recordN(t, s, "linger-", 50)
	time.Sleep(50 * time.Millisecond)
	if n := sink.calls.Load(); n > 1 {
		t.Fatalf("%d shipments for 50 records while lingering, want at most the first", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush waited for the linger: %v", err)
	}
	wantExactlyOnce(t, db, rids)
	if n := sink.calls.Load(); n > 2 {
		t.Fatalf("%d shipments for 50 records, want them batched", n)
	}
}

// A full disk stops the spool taking records and makes Writable refuse, so
// no card is revealed unrecorded; once there is room again a probe finds
// it and records are taken again. A child process plays the full disk with
// its own file size limit (RLIMIT_FSIZE), which fails the reservation of
// the next segment just as a full filesystem does, then restarts the
// spool on the full disk. Every record acknowledged before and after is
// shipped once, and the refused ones are not.
func TestFullDiskRefusesUntilThereIsRoom(t *testing.T) {
	if dir := os.Getenv("AUDITSPOOL_FULLDISK_DIR"); dir != "" {
		fullDiskChild(dir)
		return
	}
	acked := shipChildsRecords(t, "AUDITSPOOL_FULLDISK_DIR")
	if !slices.Contains(acked, "after-room") || !slices.Contains(acked, "after-restart") {
		t.Fatalf("no record was taken after the disk had room again: %v", acked)
	}
}

func fullDiskChild(dir string) {
	fail := childFail
	// Segments are reserved whole when they start, so the disk is full
	// when the next one cannot be: small ones make that happen soon.
	const segSize = 4 << 10
	opts := auditspool.Options{SegmentSize: segSize, ProbeInterval: 20 * time.Millisecond, DrainTimeout: time.Millisecond}
	s, err := auditspool.Open(dir, refusing{}, opts)
	if err != nil {
		fail("open: %v", err)
	}
	record := func(rid string) error {
		err := s.Record(context.Background(), event(rid, 0))
		if err == nil {
			fmt.Println("ACK", rid)
		}
		return err
	}
	for i := range 5 {
		if err := record("before-" + strconv.Itoa(i)); err != nil {
			fail("record with room: %v", err)
		}
	}
	// No room for another segment; the active one, already reserved, has
	// room for a few more records.
	lim, full := fileSizeLimits(segSize)
	if fileSize(dir) != segSize {
		fail("the active segment is %d bytes, want %d reserved", fileSize(dir), segSize)
	}
	setFileSizeLimit(full)
	refused := false
	for i := range 100 {
		if err := record("filling-" + strconv.Itoa(i)); err != nil {
			refused = true
			break
		}
	}
	if !refused {
		fail("a full disk took 100 records")
	}
	if s.Writable() == nil {
		fail("writable right after a failed write")
	}
	time.Sleep(40 * time.Millisecond)
	if s.Writable() == nil {
		fail("the probe passed while the disk was still full")
	}
	// roomAgain lifts the limit and expects the next probe to let the
	// spool take records again.
	roomAgain := func(rid string) {
		setFileSizeLimit(lim)
		time.Sleep(40 * time.Millisecond)
		if err := s.Writable(); err != nil {
			fail("not writable once there is room (%s): %v", rid, err)
		}
		if err := record(rid); err != nil {
			fail("record once there is room (%s): %v", rid, err)
		}
		_ = s.Close()
	}
	roomAgain("after-room")

	// A restart on a full disk: the newest segment cannot be reserved
	// again. The spool opens (to ship its backlog) but takes nothing until
	// there is room.
	setFileSizeLimit(full)
	if s, err = auditspool.Open(dir, refusing{}, opts); err != nil {
		fail("open on a full disk: %v", err)
	}
	if s.Writable() == nil {
		fail("writable after an open on a full disk")
	}
	if record("restart-full") == nil {
		fail("a full disk took a record after the restart")
	}
	roomAgain("after-restart")
	fmt.Println("DONE")
	os.Exit(0)
}

// Room reserved for a record (Reserve) is there when the record comes,
// however full the disk got meanwhile: records without a reservation do
// not take it, and a next segment that cannot be reserved leaves the
// active one, with the room in it, in place. Once the disk is full and
// the active segment too, Reserve is refused, as the access it would
// have recorded must be. A child process plays the full disk, as in
// TestFullDiskRefusesUntilThereIsRoom.
func TestReservedRoomOutlastsAFullDisk(t *testing.T) {
	if dir := os.Getenv("AUDITSPOOL_RESERVED_DIR"); dir != "" {
		reservedRoomChild(dir)
		return
	}
	if acked := shipChildsRecords(t, "AUDITSPOOL_RESERVED_DIR"); !slices.Contains(acked, "reserved") {
		t.Fatalf("the reserved record was not written: %v", acked)
	}
}

// shipChildsRecords runs the calling test's child part (childTest) on a
// spool directory of its own, which the child fills, printing "ACK <request
// id>" for each record it acknowledged, "FAIL ..." for a failed check and
// "DONE" at its end. It then ships the directory into a fresh database and
// checks that exactly the acknowledged records are stored, once each, and
// returns their request ids.
func shipChildsRecords(t *testing.T, env string) []string {
	t.Helper()
	db := openDB(t)
	dir := t.TempDir()
	out, err := childTest(t, env, dir).Output()
	if err != nil || !strings.Contains(string(out), "DONE") || strings.Contains(string(out), "FAIL") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var acked []string
	for _, line := range strings.Split(string(out), "\n") {
		if rid, ok := strings.CutPrefix(line, "ACK "); ok {
			acked = append(acked, rid)
		}
	}
	s := open(t, dir, db, auditspool.Options{})
	defer s.Close()
	flush(t, s)
	wantExactlyOnce(t, db, acked)
	return acked
}

// childFail ends a child part with a failed check, for its parent to
// report.
func childFail(format string, args ...any) {
	fmt.Printf("FAIL "+format+"\n", args...)
	os.Exit(0)
}

// fileSizeLimits returns the child's file size limit as it is (room) and
// one below size bytes (full): no segment of size can be reserved under
// it, as on a full disk.
func fileSizeLimits(size uint64) (room, full syscall.Rlimit) {
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &room); err != nil {
		childFail("getrlimit: %v", err)
	}
	full = room
	full.Cur = size - 1
	return room, full
}

// setFileSizeLimit sets the child's file size limit to l.
func setFileSizeLimit(l syscall.Rlimit) {
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &l); err != nil {
		childFail("setrlimit: %v", err)
	}
}

func reservedRoomChild(dir string) {
	fail := childFail
	const segSize = 16 << 10
	s, err := auditspool.Open(dir, refusing{}, auditspool.Options{SegmentSize: segSize, ProbeInterval: time.Hour, DrainTimeout: time.Millisecond})
	if err != nil {
		fail("open: %v", err)
	}
	reserved := event("reserved", 0)
	room, err := s.Reserve(vaultproxy.AuditEvent{Actor: reserved.Actor, MerchantAccountID: reserved.MerchantAccountID,
		Action: reserved.Action, Tokens: reserved.Tokens, Purpose: reserved.Purpose, RequestID: reserved.RequestID})
	if err != nil {
		fail("reserve with room: %v", err)
	}
	_, full := fileSizeLimits(segSize)
	setFileSizeLimit(full)
	// Records without a reservation fill what is left, the standby
	// segment too if one was ready, until one is refused.
	for i := 0; ; i++ {
		rid := "filling-" + strconv.Itoa(i)
		if err := s.Record(context.Background(), event(rid, i)); err != nil {
			break
		}
		fmt.Println("ACK", rid)
		if i == 1000 {
			fail("a full disk took 1000 records")
		}
	}
	if s.Writable() == nil {
		fail("writable after a refused record")
	}
	if r, err := s.Reserve(event("another", 0)); err == nil {
		r.Release()
		fail("room reserved on a full disk in a full segment")
	}
	if err := room.Record(context.Background(), reserved); err != nil {
		fail("the reserved record: %v", err)
	}
	fmt.Println("ACK reserved")
	_ = s.Close()
	fmt.Println("DONE")
	os.Exit(0)
}

// fileSize is the size of the newest segment in dir.
func fileSize(dir string) int64 {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	slices.Sort(segs)
	fi, err := os.Stat(segs[len(segs)-1])
	if err != nil {
		return 0
	}
	return fi.Size()
}
