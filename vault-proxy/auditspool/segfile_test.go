package auditspool_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/payorch/shared/testsupport"
	"github.com/payorch/vault-proxy/auditspool"
)

// logBuf keeps what a spool logs, for tests that look for a warning.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// dataEnd is where the frames in a segment end: frames end in the JSON's
// closing brace, and the reserved space after them is zeros.
func dataEnd(b []byte) int { return len(bytes.TrimRight(b, "\x00")) }

// wholeFrames reports whether b is a run of whole frames and nothing else.
func wholeFrames(b []byte) bool {
	for len(b) >= 16 {
		n := 16 + int(binary.BigEndian.Uint32(b))
		if n == 16 || n > len(b) {
			return false
		}
		b = b[n:]
	}
	return len(b) == 0
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A vault-proxy killed between records leaves the newest segment with its
// reserved, zero-filled tail: the next start ships every acknowledged
// record once and takes the zeros for the end of the data, not for a torn
// record.
func TestKilledSpoolLeavesAReservedTailThatIsNotTorn(t *testing.T) {
	if dir := os.Getenv("AUDITSPOOL_IDLE_CHILD_DIR"); dir != "" {
		idleChild(dir)
		return
	}
	db := openDB(t)
	dir := t.TempDir()
	cmd, sc := startChild(t, "AUDITSPOOL_IDLE_CHILD_DIR", dir)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var acked []string
	for sc.Scan() && sc.Text() != "IDLE" {
		if rid, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
			acked = append(acked, rid)
		}
	}
	if len(acked) != idleRecords {
		t.Fatalf("the child acknowledged %d records, want %d", len(acked), idleRecords)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	segs := segments(t, dir)
	newest := readFile(t, segs[len(segs)-1])
	if len(segs) < 2 || len(newest) != idleSegment || dataEnd(newest) == len(newest) {
		t.Fatalf("%d segments, the newest %d bytes with data to %d: want several, the newest reserved to %d and part zeros",
			len(segs), len(newest), dataEnd(newest), idleSegment)
	}

	var log logBuf
	s := open(t, dir, db, auditspool.Options{Log: log.logger()})
	defer s.Close()
	if err := s.Record(context.Background(), event("after-kill", 0)); err != nil {
		t.Fatal(err)
	}
	flush(t, s)
	wantExactlyOnce(t, db, append(acked, "after-kill"))
	if strings.Contains(log.String(), "torn") {
		t.Fatalf("a reserved tail was logged as torn:\n%s", log.String())
	}
}

const (
	idleRecords = 300
	idleSegment = 64 << 10
)

// idleChild records, then waits to be killed with no record in flight.
func idleChild(dir string) {
	s, err := auditspool.Open(dir, refusing{}, auditspool.Options{SegmentSize: idleSegment})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	for i := range idleRecords {
		rid := "idle-" + strconv.Itoa(i)
		if err := s.Record(context.Background(), event(rid, i)); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("ACK", rid)
	}
	fmt.Println("IDLE")
	select {}
}

// A frame torn in mid-copy lands in the reserved zeros of the active
// segment: the next start cuts it off with a warning and keeps every
// record before it. The directory is copied while its spool is open,
// which is what a kill leaves on disk.
func TestTornFrameInTheReservedTailIsCut(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	s := open(t, dir, refusing{}, auditspool.Options{SegmentSize: 8 << 10, DrainTimeout: time.Millisecond})
	var rids []string
	for i := range 40 {
		rid := fmt.Sprintf("tail-%02d", i)
		if err := s.Record(context.Background(), event(rid, i)); err != nil {
			t.Fatal(err)
		}
		rids = append(rids, rid)
	}
	clone := t.TempDir()
	copyDir(t, dir, clone)
	_ = s.Close()

	segs := segments(t, clone)
	newest := segs[len(segs)-1]
	b := readFile(t, newest)
	end := dataEnd(b)
	if len(segs) < 2 || len(b)-end < 64 {
		t.Fatalf("%d segments, the newest with %d bytes after its data: want several and a reserved tail", len(segs), len(b)-end)
	}
	// The header of record 41, its payload not yet copied.
	var hdr [16]byte
	binary.BigEndian.PutUint32(hdr[0:4], 200)
	binary.BigEndian.PutUint32(hdr[4:8], 0xdeadbeef)
	binary.BigEndian.PutUint64(hdr[8:16], 41)
	f, err := os.OpenFile(newest, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(hdr[:], int64(end)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	var log logBuf
	s2 := open(t, clone, db, auditspool.Options{Log: log.logger()})
	defer s2.Close()
	if !strings.Contains(log.String(), "torn") || !strings.Contains(log.String(), filepath.Base(newest)) {
		t.Fatalf("no torn record logged for %s:\n%s", filepath.Base(newest), log.String())
	}
	if err := s2.Record(context.Background(), event("after", 0)); err != nil {
		t.Fatal(err)
	}
	flush(t, s2)
	wantExactlyOnce(t, db, append(rids, "after"))
}

// A segment is reserved whole while it is written and cut back to its
// frames once sealed, so sealed segments on disk hold whole frames and
// nothing else, and none is over the segment size.
func TestSealedSegmentsHoldOnlyWholeFrames(t *testing.T) {
	const segSize = 4 << 10
	dir := t.TempDir()
	s := open(t, dir, refusing{}, auditspool.Options{SegmentSize: segSize, DrainTimeout: time.Millisecond})
	for i := range 60 {
		if err := s.Record(context.Background(), event("sealed-"+strconv.Itoa(i), i)); err != nil {
			t.Fatal(err)
		}
	}
	segs := segments(t, dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	// Rolls hand full segments to the preparer, which seals them soon after.
	for _, p := range segs[:len(segs)-1] {
		testsupport.Eventually(t, "sealed segment "+filepath.Base(p)+" cut to whole frames of at most the segment size", func() bool {
			b := readFile(t, p)
			return wholeFrames(b) && len(b) <= segSize
		})
	}
	var st syscall.Stat_t
	if err := syscall.Stat(segs[len(segs)-1], &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != segSize || st.Blocks*512 < segSize {
		t.Fatalf("active segment: %d bytes, %d allocated; want %d reserved", st.Size, st.Blocks*512, segSize)
	}
	// The preparer makes the next standby after each roll.
	testsupport.Eventually(t, "two files of the spool mapped, the active segment and the standby", func() bool { return mappings(t, dir) == 2 })

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := mappings(t, dir); n != 0 {
		t.Fatalf("%d segments of the spool still mapped after Close", n)
	}
	for _, p := range segments(t, dir) {
		if b := readFile(t, p); !wholeFrames(b) {
			t.Fatalf("segment %s after Close: %d bytes, data to %d; want whole frames only", filepath.Base(p), len(b), dataEnd(b))
		}
	}
}

// mappings counts this process's memory mappings of files in dir.
func mappings(t *testing.T, dir string) int {
	t.Helper()
	return strings.Count(string(readFile(t, "/proc/self/maps")), dir+"/")
}

// A record larger than the segment size gets a segment of its own size,
// whether it comes first (the empty segment is reserved again, bigger) or
// after others.
func TestRecordLargerThanASegment(t *testing.T) {
	db := openDB(t)
	s := open(t, t.TempDir(), db, auditspool.Options{SegmentSize: 1 << 10})
	defer s.Close()
	big := func(rid string) error {
		e := event(rid, 0)
		e.Detail["host"] = strings.Repeat("h", 3000)
		return s.Record(context.Background(), e)
	}
	small := func(rid string) error { return s.Record(context.Background(), event(rid, 0)) }
	steps := []struct {
		rid    string
		record func(string) error
	}{{"big-1", big}, {"small-1", small}, {"big-2", big}, {"big-3", big}, {"small-2", small}, {"small-3", small}}
	var rids []string
	for _, st := range steps {
		if err := st.record(st.rid); err != nil {
			t.Fatalf("%s: %v", st.rid, err)
		}
		rids = append(rids, st.rid)
	}
	flush(t, s)
	wantExactlyOnce(t, db, rids)
}

// A roll takes the standby the preparer made: the new segment is that very
// file, its blocks written out in full, and a new standby follows.
func TestRollTakesTheStandby(t *testing.T) {
	const segSize = 4 << 10
	dir := t.TempDir()
	s := open(t, dir, refusing{}, auditspool.Options{SegmentSize: segSize, DrainTimeout: time.Millisecond})
	defer s.Close()
	standby := filepath.Join(dir, "standby.tmp")
	var before os.FileInfo
	testsupport.Eventually(t, "the first standby", func() bool {
		fi, err := os.Stat(standby)
		before = fi
		return err == nil && fi.Size() == segSize
	})
	first := segments(t, dir)
	for i := 0; len(segments(t, dir)) == len(first); i++ {
		if err := s.Record(context.Background(), event("roll-"+strconv.Itoa(i), i)); err != nil {
			t.Fatal(err)
		}
	}
	segs := segments(t, dir)
	after, err := os.Stat(segs[len(segs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatalf("the new segment %s is not the standby that was ready", filepath.Base(segs[len(segs)-1]))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(segs[len(segs)-1], &st); err != nil || st.Blocks*512 < segSize {
		t.Fatalf("the standby's blocks: %d allocated, want %d (%v)", st.Blocks*512, segSize, err)
	}
	testsupport.Eventually(t, "the next standby", func() bool {
		fi, err := os.Stat(standby)
		return err == nil && !os.SameFile(fi, before)
	})
}

// A standby left by a crash holds no record: the next start removes it,
// whatever it contains, and ships what the segments hold.
func TestLeftoverStandbyIsRemoved(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	s := open(t, dir, refusing{}, auditspool.Options{DrainTimeout: time.Millisecond})
	rids := recordN(t, s, "before-crash-", 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte{0xAB}, 4096)
	if err := os.WriteFile(filepath.Join(dir, "standby.tmp"), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, db, auditspool.Options{})
	defer s.Close()
	flush(t, s)
	wantExactlyOnce(t, db, rids)
	testsupport.Eventually(t, "a fresh standby in place of the leftover", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "standby.tmp"))
		return err == nil && len(b) > 0 && bytes.Count(b, []byte{0}) == len(b)
	})
}
