package auditspool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
	"unsafe"
)

// shipTimeout bounds one round trip to the sink.
const shipTimeout = 30 * time.Second

// errStaleCopy is a spool directory behind its own checkpoint: a copy of
// another instance's spool. Its new records would be numbered as already
// stored, so it takes none.
var errStaleCopy = errors.New("auditspool: this directory is a stale copy of a spool")

// reader follows the segments from the oldest unshipped record on.
type reader struct {
	seg *segment
	f   *os.File
	// lo and hi bound the bytes of f holding frames of the batch being
	// read (has: any); held lists earlier segments' such ranges. They are
	// made durable before the batch ships (see syncFrames).
	lo, hi int64
	has    bool
	held   []heldRange
	off    int64  // next byte to read in seg
	buf    []byte // bytes read but not yet parsed into records
	store  []byte // buf's backing array, reused between reads
	batch  []byte // the JSON array being built, reused between batches
}

func (r *reader) close() {
	if r.f != nil {
		_ = r.f.Close()
		r.f = nil
	}
	for _, h := range r.held {
		_ = h.f.Close()
	}
	r.held = r.held[:0]
}

// heldRange is the part of a segment file holding frames of a batch.
type heldRange struct {
	f      *os.File
	lo, hi int64
}

// syncFrames makes the frames of the batch just read durable on disk: the
// byte range holding them in each segment file. The frames reach the disk
// on the kernel's schedule otherwise, tens of seconds after they were
// copied in; a checkpoint committed before them would, after a power loss,
// be ahead of the spool on disk, and the spool would be taken for a stale
// copy and refuse to start. One sync per batch, on the shipper, never on
// the request path; only the batch's pages, not the rest of the segment
// (whose pages would then fault again when written).
func (s *Spool) syncFrames(rd *reader) error {
	ranges := rd.held
	if rd.has {
		ranges = append(ranges, heldRange{rd.f, rd.lo, rd.hi})
	}
	for _, h := range ranges {
		if err := s.opts.syncFile(h.f, h.lo, h.hi); err != nil {
			return fmt.Errorf("sync segment: %w", err)
		}
	}
	// A segment's name (a standby renamed into place) must be durable too:
	// a standby left by a crash is removed at start, frames and all. Once
	// per segment, when its first frames ship.
	if n := len(ranges); n > 0 && ranges[n-1].f.Name() != s.dirSynced {
		if err := s.opts.syncDir(s.dir); err != nil {
			return fmt.Errorf("sync spool directory: %w", err)
		}
		s.dirSynced = ranges[n-1].f.Name()
	}
	for _, h := range rd.held {
		_ = h.f.Close()
	}
	rd.held, rd.has = rd.held[:0], false
	return nil
}

// syncRange is syncFile's default: msync(MS_SYNC) of a read-only mapping
// of f's pages over [lo, hi), which writes them back as fdatasync would
// (file data, the metadata needed to read it, the disk's cache), for that
// range only.
func syncRange(f *os.File, lo, hi int64) error {
	ps := int64(os.Getpagesize())
	start := lo &^ (ps - 1)
	mem, err := syscall.Mmap(int(f.Fd()), start, int(hi-start), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fdatasync(f)
	}
	defer syscall.Munmap(mem) //nolint:errcheck // the range is synced or the error below says not
	_, _, errno := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), syscall.MS_SYNC)
	if errno != 0 {
		return errno
	}
	return nil
}

// syncDirectory is syncDir's default: fsync of the directory, which makes
// its entries (a segment's rename into place) durable.
func syncDirectory(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// fdatasync is syncRange's fallback.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// ship runs until Close: it loads the checkpoint, then moves records into
// the sink whenever there are any, backing off while the sink fails.
func (s *Spool) ship() {
	defer close(s.done)
	var rd reader
	defer rd.close()
	loaded := true // by Open
	delay := s.opts.RetryMin
	var drainBy time.Time // set once Close asks for the last shipments
	for {
		if !drainBy.IsZero() && (time.Now().After(drainBy) || s.shipped.Load() >= s.written.Load()) {
			return
		}
		var err error
		if !loaded {
			if err = s.loadCheckpoint(); err == nil {
				loaded = true
				rd.close()
				rd = reader{}
			} else if errors.Is(err, errStaleCopy) {
				s.mu.Lock()
				s.setBroken(err)
				s.mu.Unlock()
			}
		}
		moved := 0
		if err == nil {
			moved, err = s.shipSome(&rd)
		}
		switch {
		case errors.Is(err, ErrCheckpointMoved):
			// Most often our own last batch, committed though its answer
			// was lost; otherwise a copy of this spool shipping elsewhere,
			// which the reload finds.
			loaded = false
			s.opts.Log.Warn("audit spool: the checkpoint moved under this shipper; reloading it", "spool", s.id)
			continue
		case err != nil:
			s.shipErr.Store(&err)
			s.opts.Log.Warn("audit spool: shipping to the database failed; retrying", "err", err, "retry_in", delay, "backlog", s.Backlog())
			if !s.sleep(delay, &drainBy) {
				return
			}
			delay = min(2*delay, s.opts.RetryMax)
			continue
		}
		s.shipErr.Store(nil)
		delay = s.opts.RetryMin
		if moved >= s.opts.BatchSize {
			continue // a backlog: ship on
		}
		if drainBy.IsZero() {
			if moved == 0 {
				select {
				case <-s.wake:
				case <-s.stop:
					drainBy = time.Now().Add(s.opts.DrainTimeout)
					continue
				}
			}
			s.linger(&drainBy)
		} else if moved > 0 {
			continue
		} else if s.shipped.Load() < s.written.Load() {
			// Nothing readable yet but records are written: a frame is in
			// flight in the writer; look again shortly.
			time.Sleep(time.Millisecond)
		}
	}
}

// linger gives a partial batch time to fill, unless a Flush or Close is
// waiting.
func (s *Spool) linger(drainBy *time.Time) {
	if s.opts.Linger <= 0 || s.Backlog() >= uint64(s.opts.BatchSize) {
		return
	}
	t := time.NewTimer(s.opts.Linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.urgent:
	case <-s.stop:
		*drainBy = time.Now().Add(s.opts.DrainTimeout)
	}
}

// sleep waits d, or less when Close starts draining. It reports false when
// the drain deadline has passed.
func (s *Spool) sleep(d time.Duration, drainBy *time.Time) bool {
	if !drainBy.IsZero() {
		left := time.Until(*drainBy)
		if left <= 0 {
			return false
		}
		time.Sleep(min(d, left))
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
		*drainBy = time.Now().Add(s.opts.DrainTimeout)
	}
	return true
}

func (s *Spool) loadCheckpoint() error {
	ctx, cancel := context.WithTimeout(context.Background(), shipTimeout)
	defer cancel()
	cp, err := s.sink.AuditCheckpoint(ctx, s.id)
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	if w := s.written.Load(); cp > w {
		return fmt.Errorf("%w: the database holds records of spool %s up to %d, past the %d in %s; give this instance its own empty spool directory",
			errStaleCopy, s.id, cp, w, s.dir)
	}
	s.advance(cp)
	return nil
}

// advance publishes a new shipped position to Flush callers.
func (s *Spool) advance(seq uint64) {
	s.pmu.Lock()
	s.shipped.Store(seq)
	close(s.progress)
	s.progress = make(chan struct{})
	s.pmu.Unlock()
}

// shipSome sends the next batch, if any, and returns how many records it
// moved.
func (s *Spool) shipSome(rd *reader) (int, error) {
	b, err := s.readBatch(rd)
	if err != nil {
		// The reader may have consumed frames of the failed batch (or lost
		// its file): start again from the shipped position.
		rd.close()
		*rd = reader{batch: rd.batch}
		return 0, err
	}
	if b.Count() == 0 {
		return 0, nil
	}
	if err := s.syncFrames(rd); err != nil {
		rd.close()
		*rd = reader{batch: rd.batch}
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), shipTimeout)
	defer cancel()
	if err := s.sink.ShipAudit(ctx, s.id, b); err != nil {
		// The records are read again from the spool on the next try.
		rd.close()
		*rd = reader{batch: rd.batch}
		return 0, err
	}
	s.advance(b.Last)
	s.dropShipped()
	return b.Count(), nil
}

// readBatch returns up to BatchSize records after the shipped position,
// reading only whole frames the writer has finished. The records are
// copied from the frames as they are, with no decoding.
func (s *Spool) readBatch(rd *reader) (Batch, error) {
	b := Batch{Prev: s.shipped.Load()}
	b.Last = b.Prev
	rd.batch = append(rd.batch[:0], '[')
	for b.Count() < s.opts.BatchSize {
		// The first segment holding a record past Last, and how far its
		// complete frames reach now.
		s.mu.Lock()
		var seg *segment
		var end int64
		for _, g := range s.segments {
			if g.last > b.Last {
				seg, end = g, g.size
				break
			}
		}
		s.mu.Unlock()
		if seg == nil {
			break
		}
		if rd.seg != seg {
			held := rd.held
			if rd.has {
				held = append(held, heldRange{rd.f, rd.lo, rd.hi}) // frames of this batch
			} else if rd.f != nil {
				_ = rd.f.Close()
			}
			f, err := os.Open(seg.path)
			if err != nil {
				for _, h := range held {
					_ = h.f.Close()
				}
				return Batch{}, fmt.Errorf("open segment: %w", err)
			}
			*rd = reader{seg: seg, f: f, store: rd.store, batch: rd.batch, held: held}
		}
		if rd.off < end {
			// Read after the unparsed bytes, moved to the front of the
			// reused array: left where they were, the parsed front would
			// be lost room and every batch would grow a new array (a
			// heap allocation the size of the batch, GC work the
			// request path pays for).
			want := int(min(end-rd.off, 1<<20))
			rd.buf = slices.Grow(append(rd.store[:0], rd.buf...), want)
			rd.store = rd.buf[:0]
			n, err := rd.f.ReadAt(rd.buf[len(rd.buf):len(rd.buf)+want], rd.off)
			if err != nil && !errors.Is(err, io.EOF) {
				return Batch{}, fmt.Errorf("read segment: %w", err)
			}
			rd.buf = rd.buf[:len(rd.buf)+n]
			rd.off += int64(n)
		}
		progress := false
		for len(rd.buf) > 0 && b.Count() < s.opts.BatchSize {
			n, seq, payload, err := nextFrame(rd.buf)
			if err != nil {
				return Batch{}, fmt.Errorf("segment %s: %w", filepath.Base(seg.path), err)
			}
			if n == 0 {
				break
			}
			if seq > b.Last {
				if seq != b.Last+1 {
					return Batch{}, fmt.Errorf("segment %s: record %d follows %d", filepath.Base(seg.path), seq, b.Last)
				}
				at := rd.off - int64(len(rd.buf)) // this frame's offset in the file
				if !rd.has {
					rd.lo, rd.has = at, true
				}
				rd.hi = at + int64(n)
				if b.Count() > 0 {
					rd.batch = append(rd.batch, ',')
				}
				rd.batch = append(rd.batch, payload...)
				b.Last = seq
			}
			rd.buf, progress = rd.buf[n:], true
		}
		if !progress && rd.off >= end {
			return Batch{}, fmt.Errorf("segment %s: record %d is missing", filepath.Base(seg.path), b.Last+1)
		}
	}
	b.Records = append(rd.batch, ']')
	return b, nil
}

// dropShipped deletes sealed segments whose records are all committed.
// The files are removed outside mu: an unlink takes ~0.7 ms here, which
// records would otherwise wait for. Only this goroutine removes segments
// and Record only appends them, so the prefix found under mu is still the
// prefix after.
func (s *Spool) dropShipped() {
	shipped := s.shipped.Load()
	s.mu.Lock()
	var drop []*segment
	for i, g := range s.segments {
		if i == len(s.segments)-1 || g.last > shipped || g.last == 0 {
			break
		}
		drop = append(drop, g)
	}
	s.mu.Unlock()
	removed := 0
	for _, g := range drop {
		if err := os.Remove(g.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.opts.Log.Warn("audit spool: a shipped segment could not be removed", "segment", filepath.Base(g.path), "err", err)
			break
		}
		removed++
	}
	if removed > 0 {
		s.mu.Lock()
		s.segments = append(s.segments[:0:0], s.segments[removed:]...)
		s.mu.Unlock()
	}
}
