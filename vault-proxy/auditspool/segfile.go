package auditspool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The active segment is a file whose disk blocks are reserved up front and
// which is mapped MAP_SHARED: Record copies a frame into the mapping, and
// the kernel's page cache holds it from then on, as it would after a
// write(2). The bytes past the last frame are zeros until a frame lands
// there; load reads a zero frame header followed by zeros as the end of
// the data. A sealed segment is cut back to its frames.

// zeroChunk is how much writeZeros writes at a time (a prefilled segment,
// or a filesystem without fallocate). Measured over a segment's life on
// ext4 (prefill, records with a shipper's msync per 500, seal), per 8 MiB:
// 64 KiB 13-16 ms of CPU, 16 KiB 15-19 ms (more writes), 256 KiB 16-17 ms
// and 1 MiB 28 ms: larger writes make larger page-cache folios, which
// each msync then writes back whole.
const zeroChunk = 64 << 10

// mapSegment makes seg the active segment with room for capacity bytes:
// it opens the file (creating it, and only that, when fresh), reserves its
// blocks and maps it. A store into a mapping of unallocated blocks on a
// full disk is a SIGBUS, not an error; reserving first turns a full disk
// into an error here, where the record can be refused. A failure leaves
// no trace of the attempt: a fresh file is removed, any other cut back to
// its frames (it stays, even empty: the newest segment's name is what
// carries the numbering across a restart). If even that fails the spool
// is broken. prefill reserves by writing zeros and faults the pages in
// (see standby.go): milliseconds, for the start, never for a record.
// Called with mu held.
func (s *Spool) mapSegment(seg *segment, fresh bool, capacity int64, prefill bool) error {
	f, mem, err := s.reserveSegment(seg, fresh, capacity, prefill)
	if err == nil {
		s.file, s.mem = f, mem
	}
	return err
}

// reserveSegment is mapSegment without making the segment the active
// one: a roll keeps the active segment, and the room reserved in it,
// until the next one is ready.
func (s *Spool) reserveSegment(seg *segment, fresh bool, capacity int64, prefill bool) (*os.File, []byte, error) {
	flag := os.O_RDWR | os.O_CREATE
	if fresh {
		flag |= os.O_EXCL
	}
	f, err := os.OpenFile(seg.path, flag, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("auditspool: segment: %w", err)
	}
	mem, err := reserve(f, seg.size, capacity, prefill)
	if err == nil {
		return f, mem, nil
	}
	err = fmt.Errorf("auditspool: reserve %d bytes for segment %s: %w", capacity, filepath.Base(seg.path), err)
	if uerr := unreserve(f, seg, fresh); uerr != nil {
		s.setBroken(fmt.Errorf("auditspool: segment %s could not be restored after a failed reservation (%v): %w", filepath.Base(seg.path), err, uerr))
		s.opts.Log.Error("audit spool stopped taking records", "segment", filepath.Base(seg.path), "err", s.broken)
		return nil, nil, s.broken
	}
	return nil, nil, err
}

// reserve allocates f's blocks up to capacity and maps that much of it.
// The first keep bytes are frames already written. prefill writes the
// rest as zeros and faults the mapping in, instead of fallocate's quick
// reservation whose pages cost the stores into them (standby.go).
func reserve(f *os.File, keep, capacity int64, prefill bool) ([]byte, error) {
	var err error
	if prefill {
		err = writeZeros(f, keep, capacity)
	} else {
		err = allocate(f, keep, capacity)
	}
	if err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(capacity), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if prefill {
		populate(mem)
	}
	return mem, nil
}

// allocate gives f disk blocks for its first capacity bytes, by fallocate
// or, where the filesystem has none, by writing zeros past keep.
func allocate(f *os.File, keep, capacity int64) error {
	var err error
	for {
		err = syscall.Fallocate(int(f.Fd()), 0, 0, capacity)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return writeZeros(f, keep, capacity)
	}
	if err != nil {
		return fmt.Errorf("fallocate: %w", err)
	}
	return nil
}

// writeZeros fills f from off up to end with zeros, which allocates their
// blocks as fallocate would.
func writeZeros(f *os.File, off, end int64) error {
	zeros := make([]byte, zeroChunk)
	for off < end {
		n, err := f.WriteAt(zeros[:min(end-off, zeroChunk)], off)
		if err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// unreserve undoes a failed reservation of seg and closes f.
func unreserve(f *os.File, seg *segment, fresh bool) error {
	var err error
	if fresh {
		err = os.Remove(seg.path)
	} else {
		err = f.Truncate(seg.size)
	}
	return errors.Join(err, f.Close())
}

// seal closes the active segment, if one is mapped: it unmaps it and cuts
// the file back to its frames, so that a sealed segment on disk is whole
// frames only. The frames stay in the page cache; munmap does not drop
// dirty pages. Called with mu held.
func (s *Spool) seal() error {
	if s.file == nil {
		return nil
	}
	j := s.detach()
	return j.seal(s.opts.syncFile)
}

// sealJob is a segment taken off the request path, still to be sealed.
type sealJob struct {
	f    *os.File
	mem  []byte
	size int64
	name string
}

// detach takes the active segment off the spool for sealing. Called with
// mu held and a segment mapped.
func (s *Spool) detach() sealJob {
	seg := s.segments[len(s.segments)-1]
	j := sealJob{f: s.file, mem: s.mem, size: seg.size, name: filepath.Base(seg.path)}
	s.file, s.mem = nil, nil
	return j
}

// seal unmaps a retired segment, cuts it back to its whole frames and
// makes them durable. Without the sync, a machine crash soon after a roll
// could keep the next segment's name (filesystem metadata, journalled
// within seconds) but lose this one's unshipped tail (data, written back
// tens of seconds later), and Open would find records missing between
// the two. It runs on the preparer, off the request path, once per
// segment; the segment is no longer mapped, so nothing faults again.
func (j sealJob) seal(sync func(f *os.File, lo, hi int64) error) error {
	err := syscall.Munmap(j.mem)
	if err != nil {
		err = fmt.Errorf("munmap: %w", err)
	}
	err = errors.Join(err, j.f.Truncate(j.size))
	if j.size > 0 {
		err = errors.Join(err, sync(j.f, 0, j.size))
	}
	err = errors.Join(err, j.f.Close())
	if err != nil {
		return fmt.Errorf("auditspool: seal segment %s: %w", j.name, err)
	}
	return nil
}

// diskFull reports whether err is a reservation refused for want of room:
// no space, a quota, or a file size limit.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// allZero reports whether b holds nothing but zeros: the unwritten rest of
// a segment's reserved space.
func allZero(b []byte) bool {
	return bytes.Count(b, []byte{0}) == len(b)
}
