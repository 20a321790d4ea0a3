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
// off and logged; damage anywhere else is an error, because those records
// would be lost silently. Only one process may have a directory open, and
// the sink must answer: a directory the sink has seen further than it
// reaches (a stale copy of another instance's spool) is refused, since
// its new records would be numbered as already stored.
func Open(dir string, sink Sink, opts Options) (*Spool, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auditspool: %w", err)
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
	if err := s.loadCheckpoint(); err != nil {
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

// load reads the id and the segments, checks them, and maps the newest
// for appending.
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
		if seg.first != next && !(i == 0 && seg.first > next) {
			return fmt.Errorf("auditspool: segment %s starts at record %d, want %d: records are missing", filepath.Base(seg.path), seg.first, next)
		}
		last := i == len(segs)-1
		if err := s.check(seg, last); err != nil {
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
	return s.reopen()
}

// reopen maps the newest segment to append after its frames. A disk too
// full to reserve it does not stop the start: the spool refuses records,
// and Writable reveals nothing, until a probe finds room (shipping the
// backlog frees some). Called by load, before the spool is shared.
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

// check scans seg's frames, setting seg.size and seg.last, and cuts the
// file back to them. What follows the frames may be zeros: the reserved
// space of a segment that was not sealed (vault-proxy or the machine
// stopped), which is the end of the data. Anything else is a torn frame,
// cut off in the newest segment and an error in any other.
func (s *Spool) check(seg *segment, newest bool) error {
	b, err := os.ReadFile(seg.path)
	if err != nil {
		return fmt.Errorf("auditspool: %w", err)
	}
	off := 0
	want := seg.first
	for off < len(b) {
		n, seq, _, err := nextFrame(b[off:])
		if err == nil && n > 0 && seq != want {
			err = fmt.Errorf("record %d where %d was expected", seq, want)
		}
		if err != nil || n == 0 {
			break
		}
		seg.last, want = seq, seq+1
		off += n
	}
	seg.size = int64(off)
	if off == len(b) {
		return nil
	}
	if !allZero(b[off:]) {
		if !newest {
			return fmt.Errorf("auditspool: segment %s is damaged at byte %d; its later records cannot be read (move the file aside to start without them)", filepath.Base(seg.path), off)
		}
		s.opts.Log.Warn("audit spool: dropped a torn record at the end of the newest segment (vault-proxy or the machine stopped in mid-write)",
			"segment", filepath.Base(seg.path), "bytes", len(b)-off)
	}
	if err := os.Truncate(seg.path, int64(off)); err != nil {
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
