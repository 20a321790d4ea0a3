package auditspool

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// A segment is started on the request path only when nothing was made
// ready for it: the spool keeps a standby segment, made by a goroutine of
// its own, and hands it the segments a roll retires to seal. Measured on
// ext4 on these VMs, for an 8 MiB segment of ~450-byte records:
//
//   - fallocate reserves unwritten extents; the first store to each page
//     then converts one, about 0.5 us per record on average and up to
//     2.7 ms for the worst store. A standby is written as zeros instead
//     (2-3 ms, off the request path), so its blocks are plain written
//     blocks, and its page tables are filled ahead (MADV_POPULATE_WRITE):
//     a record then costs its copy, ~0.08 us, the worst ~3 us. Faulting
//     in fallocate's unwritten extents instead costs the preparer twice
//     as much (6 ms against 3 ms), and the syncs and the seal after it
//     more than twice;
//   - sealing (munmap and cutting the zero tail) takes 0.3-1.4 ms, which
//     under mu every record behind the roll would wait for.
//
// A crash before a retired segment is sealed leaves its zero tail, which
// load reads as the end of its frames. A standby left by a crash is
// removed at the next start; it never holds a record.
const standbyName = "standby.tmp"

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the range in
// writable without changing its contents. Older kernels refuse it, which
// only costs the first store to each page its fault.
const madvPopulateWrite = 23

// standby is a segment file made ready for the next roll.
type standby struct {
	f   *os.File
	mem []byte
}

func (s *Spool) standbyPath() string { return filepath.Join(s.dir, standbyName) }

// newStandby writes zeros over capacity bytes of a fresh file at path and
// maps it with its pages faulted in.
func newStandby(path string, capacity int64) (*standby, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	mem, err := reserve(f, 0, capacity, true)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return &standby{f: f, mem: mem}, nil
}

// populate faults mem's pages in, writable, without changing them. Best
// effort: a kernel without MADV_POPULATE_WRITE leaves the faults to the
// stores.
func populate(mem []byte) {
	if len(mem) > 0 {
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), madvPopulateWrite)
	}
}

// discard unmaps, closes and removes a standby that was not used.
func (sb *standby) discard(path string) {
	_ = syscall.Munmap(sb.mem)
	_ = sb.f.Close()
	_ = os.Remove(path)
}

// takeStandby renames the standby to seg's name and returns its file and
// mapping, when it is ready and large enough. Called with mu held, seg
// fresh.
func (s *Spool) takeStandby(seg *segment, need int64) (*os.File, []byte, bool) {
	sb := s.standby
	if sb == nil || int64(len(sb.mem)) < need {
		return nil, nil, false
	}
	s.standby = nil
	s.wakePreparer()
	// rename(2) would replace a file already at seg's name; none can be
	// (names are sequence numbers, the directory is flocked), but a
	// segment is worth a stat.
	if _, err := os.Lstat(seg.path); err == nil {
		sb.discard(s.standbyPath())
		return nil, nil, false
	}
	if err := os.Rename(s.standbyPath(), seg.path); err != nil {
		s.opts.Log.Warn("audit spool: the standby segment could not be put in place; starting one in line", "err", err)
		sb.discard(s.standbyPath())
		return nil, nil, false
	}
	return sb.f, sb.mem, true
}

// retire takes the active segment off the spool at a roll, for the
// preparer to seal. No roll happens once Close has set closed (Record and
// Writable check it under mu first), so the preparer, which seals what is
// queued before it stops, leaves nothing unsealed. Called with mu held.
func (s *Spool) retire() {
	if s.file == nil {
		return
	}
	s.toSeal = append(s.toSeal, s.detach())
	s.wakePreparer()
}

func (s *Spool) wakePreparer() {
	select {
	case s.prepWake <- struct{}{}:
	default:
	}
}

// prepare runs until Close: it seals the segments rolls retired and keeps a
// standby segment ready.
func (s *Spool) prepare() {
	defer close(s.prepDone)
	for {
		select {
		case <-s.prepWake:
		case <-s.stop:
			s.sealRetired()
			return
		}
		s.sealRetired()
		s.makeStandby()
	}
}

func (s *Spool) sealRetired() {
	s.mu.Lock()
	jobs := s.toSeal
	s.toSeal = nil
	s.mu.Unlock()
	for _, j := range jobs {
		if err := j.seal(s.opts.syncFile); err != nil {
			// Its zero tail stays on disk, which load reads as the end of
			// its frames.
			s.opts.Log.Warn("audit spool: a full segment could not be sealed", "err", err)
		}
	}
}

// makeStandby makes a standby segment if none is ready. A failure (a full
// disk) is left to the next roll, which reserves in line and reports it.
func (s *Spool) makeStandby() {
	s.mu.Lock()
	needed := s.standby == nil && !s.closed && s.broken == nil
	s.mu.Unlock()
	if !needed {
		return
	}
	sb, err := newStandby(s.standbyPath(), s.opts.SegmentSize)
	if err != nil {
		s.opts.Log.Debug("audit spool: no standby segment", "err", fmt.Sprint(err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.standby != nil {
		sb.discard(s.standbyPath())
		return
	}
	s.standby = sb
}

// dropStandby discards the standby at Close. Called with mu held.
func (s *Spool) dropStandby() {
	if s.standby != nil {
		s.standby.discard(s.standbyPath())
		s.standby = nil
	}
}
