package auditspool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/uuid"
)

// idFile holds the spool's id. A new directory gets a new id, so a
// checkpoint can never be applied to records it did not count.
const (
	idFile   = "SPOOL_ID"
	lockFile = "LOCK"
)

// Open opens (or creates) the spool in dir and starts shipping to sink.
// It checks every record already in the directory: a torn record at the
// very end of the newest segment (a machine crash in mid-write) is cut
// off and logged. Records missing anywhere else (a crash before a
// segment's pages reached the disk, a damaged frame, a lost file) are
// replaced by loss markers, which the trail then shows (repair.go), so
// that nothing is lost silently and the spool still starts. Only one
// process may have a directory open, and the sink must answer: a
// directory the sink has seen further than it reaches (a stale copy of
// another instance's spool), or one missing records the sink already
// holds, is refused, since its new records would be numbered as already
// stored.
func Open(dir string, sink Sink, opts Options) (*Spool, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auditspool: %w", err)
	}
	if err := checkFilesystem(dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Spool{
		dir: dir, sink: sink, opts: opts, lock: lock,
		wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), progress: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		prepWake: make(chan struct{}, 1), prepDone: make(chan struct{}),
	}
	if err := s.load(); err != nil {
		_ = unlock(lock)
		return nil, err
	}
	err = s.loadCheckpoint()
	if err == nil {
		err = s.repair(s.shipped.Load())
	}
	if err == nil {
		err = s.reopen()
	}
	if err != nil {
		_ = s.seal()
		_ = unlock(lock)
		return nil, err
	}
	go s.ship()
	go s.prepare()
	s.wakePreparer() // the first standby
	return s, nil
}

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auditspool: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("auditspool: %s is in use by another process (each instance needs its own spool directory): %w", dir, err)
	}
	return f, nil
}

func unlock(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close() // closing the descriptor releases the flock
}

// load reads the id and the segments and checks them, noting the records
// missing between them (repair marks them once the checkpoint is known).
func (s *Spool) load() error {
	id, err := readOrCreateID(s.dir)
	if err != nil {
		return err
	}
	s.id = id

	// A standby left by a crash holds no record (standby.go).
	if err := os.Remove(s.standbyPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("auditspool: %w", err)
	}
	segs, err := listSegments(s.dir)
	if err != nil {
		return err
	}
	next := uint64(1)
	for i, seg := range segs {
		if i > 0 && seg.first < next {
			return fmt.Errorf("auditspool: segment %s starts at record %d, but the segment before it holds records up to %d", filepath.Base(seg.path), seg.first, next-1)
		}
		if i > 0 && seg.first > next {
			// The end of the segment before is missing (or a segment is).
			prev := segs[i-1]
			prev.holes = append(prev.holes, hole{next, seg.first - 1})
		}
		if err := s.check(seg, i == len(segs)-1); err != nil {
			return err
		}
		next = seg.first
		if seg.last > 0 {
			next = seg.last + 1
		}
	}
	if len(segs) == 0 {
		segs = []*segment{{first: 1, path: filepath.Join(s.dir, segmentName(1))}}
	}
	s.segments, s.nextSeq = segs, next
	s.written.Store(next - 1)
	return nil
}

// reopen maps the newest segment to append after its frames. A disk too
// full to reserve it does not stop the start: the spool refuses records,
// and Writable reveals nothing, until a probe finds room (shipping the
// backlog frees some). Called by Open, before the spool is shared.
func (s *Spool) reopen() error {
	tail := s.segments[len(s.segments)-1]
	err := s.mapSegment(tail, false, max(s.opts.SegmentSize, tail.size), true)
	if err == nil || s.broken != nil || !diskFull(err) {
		return err
	}
	s.failing.Store(&failure{err: err, probe: s.opts.Now().Add(s.opts.ProbeInterval)})
	s.opts.Log.Error("audit spool: no room to reserve a segment; card data is not revealed until there is", "err", err)
	return nil
}

// check scans seg's frames, setting seg.size and seg.last and noting the
// records missing between them, and cuts the file back to its last whole
// frame. What follows the frames may be zeros: the reserved space of a
// segment that was not sealed (vault-proxy or the machine stopped), which
// is the end of the data. Anything else is a torn frame: logged and cut
// off; in an older segment, the records it held are then missing before
// the next segment's first, and marked as lost by repair.
func (s *Spool) check(seg *segment, newest bool) error {
	b, err := os.ReadFile(seg.path)
	if err != nil {
		return fmt.Errorf("auditspool: %w", err)
	}
	sc := scanFrames(b, seg.first, nil)
	seg.size, seg.last = int64(sc.end), sc.last
	seg.holes = sc.holes
	if sc.end == len(b) {
		return nil
	}
	if !allZero(b[sc.end:]) {
		msg := "audit spool: dropped a torn record at the end of the newest segment (vault-proxy or the machine stopped in mid-write)"
		if !newest {
			msg = "audit spool: a segment ends in a damaged record; the records it held are marked as lost"
		}
		s.opts.Log.Warn(msg, "segment", filepath.Base(seg.path), "bytes", len(b)-sc.end)
	}
	if err := os.Truncate(seg.path, int64(sc.end)); err != nil {
		return fmt.Errorf("auditspool: cut the end of segment %s: %w", filepath.Base(seg.path), err)
	}
	return nil
}

func readOrCreateID(dir string) (uuid.UUID, error) {
	p := filepath.Join(dir, idFile)
	b, err := os.ReadFile(p)
	if err == nil {
		id, err := uuid.Parse(strings.TrimSpace(string(b)))
		if err != nil {
			return uuid.Nil, fmt.Errorf("auditspool: %s does not hold a spool id", p)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return uuid.Nil, fmt.Errorf("auditspool: %w", err)
	}
	if segs, _ := listSegments(dir); len(segs) > 0 {
		// Records without an id could already be partly shipped under the
		// lost one: refuse rather than ship them twice or guess.
		return uuid.Nil, fmt.Errorf("auditspool: %s has segments but no %s", dir, idFile)
	}
	id := uuid.New()
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(id.String()+"\n"), 0o600); err != nil {
		return uuid.Nil, fmt.Errorf("auditspool: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return uuid.Nil, err
	}
	if err := os.Rename(tmp, p); err != nil {
		return uuid.Nil, fmt.Errorf("auditspool: %w", err)
	}
	return id, syncFile(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("auditspool: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("auditspool: sync %s: %w", filepath.Base(path), err)
	}
	return nil
}

// listSegments returns the directory's segment files, oldest first.
func listSegments(dir string) ([]*segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("auditspool: %w", err)
	}
	var segs []*segment
	for _, e := range ents {
		name := e.Name()
		num, ok := strings.CutSuffix(name, ".seg")
		if !ok || e.IsDir() {
			continue
		}
		first, err := strconv.ParseUint(num, 10, 64)
		if err != nil || first == 0 {
			return nil, fmt.Errorf("auditspool: unexpected file %s in the spool", name)
		}
		segs = append(segs, &segment{first: first, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(segs, func(a, b *segment) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	return segs, nil
}
