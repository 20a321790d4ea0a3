// Package auditspool takes vault-proxy's audit trail off the request path
// without losing a record. Record copies the checksummed event into a
// local, append-only segment file that is mapped into memory and returns:
// no system call on the request path, but for those that start a new
// segment every SegmentSize bytes. A shipper goroutine moves the records
// into the vault database in batches, each batch committed together with
// the spool's checkpoint, so every record reaches the table exactly once,
// across crashes and restarts of either side.
//
// What a returned Record guarantees: the record is in the kernel's page
// cache (the mapping is shared, so the copy is the file's page, exactly
// as after a write(2)). It survives a crash of vault-proxy (the next start
// ships it) and any outage of PostgreSQL (the spool grows on disk until
// the database is back). Only a crash of the machine itself can lose the
// records not yet shipped, which in normal operation are those of the
// last few milliseconds; a torn last record (one cut short by the crash)
// is detected by its checksum and dropped at the next start. This is the
// guarantee Vault's own file audit device gives, and the trade-off is
// recorded in SECURITY.md ("Audit log durability").
//
// A store into a mapped file whose disk is full kills the process with
// SIGBUS instead of failing, so each segment's disk blocks are reserved
// before it is mapped: written as zeros ahead of need by a preparer
// goroutine (standby.go), or with fallocate at the roll when none is
// ready. A full disk shows as a record refused at a segment boundary, and
// the space the mapping writes to is already the file's. The record of a
// card's use is written after the use, so its room is reserved before
// (Reserve): a full disk then refuses the use, not its record. A sealed segment is cut back to its whole frames; the
// newest may end in reserved zeros after a crash, which the next start
// reads as the end of its data.
package auditspool

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
)

// Batch is a run of spooled records on its way to the sink.
type Batch struct {
	Prev, Last uint64 // the records are numbered Prev+1 .. Last
	// Records is a JSON array of the records, oldest first, exactly as
	// they were spooled (see record for their members). It is only valid
	// during the ShipAudit call.
	Records []byte
}

// Count is the number of records in b.
func (b Batch) Count() int { return int(b.Last - b.Prev) }

// Sink is where records are shipped to (the vault database).
type Sink interface {
	// AuditCheckpoint returns the highest sequence number of spool that is
	// already stored, 0 for a spool it has never seen.
	AuditCheckpoint(ctx context.Context, spool uuid.UUID) (uint64, error)
	// ShipAudit stores b's records and moves the spool's checkpoint from
	// b.Prev to b.Last, atomically. It returns ErrCheckpointMoved, storing
	// nothing, when the checkpoint is not at b.Prev.
	ShipAudit(ctx context.Context, spool uuid.UUID, b Batch) error
}

// EncodeBatch is the batch the spool would ship for events spooled after
// record prev: for tools and for tests of a Sink.
func EncodeBatch(prev uint64, events ...vaultproxy.AuditEvent) (Batch, error) {
	b := Batch{Prev: prev, Last: prev + uint64(len(events)), Records: []byte{'['}}
	for i, e := range events {
		if i > 0 {
			b.Records = append(b.Records, ',')
		}
		var err error
		if b.Records, err = appendRecord(b.Records, e); err != nil {
			return Batch{}, err
		}
	}
	b.Records = append(b.Records, ']')
	return b, nil
}

// ErrCheckpointMoved means another shipper stored records of this spool
// (a copy of the spool directory running elsewhere); the shipper reloads
// the checkpoint instead of storing them twice.
var ErrCheckpointMoved = errors.New("auditspool: the spool's checkpoint moved")

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("auditspool: closed")

// Options tune a spool; the zero value is the production setting.
type Options struct {
	// SegmentSize is the space reserved for a segment file (default
	// 8 MiB); a record that does not fit in what is left starts the next
	// segment. A record larger than this gets a segment of its own size.
	SegmentSize int64
	BatchSize   int // records per shipped batch (default 500)
	// Linger is how long the shipper waits for a batch to fill before it
	// ships a partial one (default 20 ms; a negative value ships at once).
	// Records are durable in the spool while they wait; what it saves is
	// a database commit per few records, whose CPU the proxy would share.
	// Flush does not wait for it.
	Linger       time.Duration
	RetryMin     time.Duration // first back-off after a failed shipment (default 100 ms)
	RetryMax     time.Duration // longest back-off (default 5 s)
	DrainTimeout time.Duration // how long Close keeps shipping (default 10 s)
	// ProbeInterval is how often Writable checks again whether a spool
	// that could not reserve its next segment (a full disk) can now
	// (default 1 s).
	ProbeInterval time.Duration
	Now           func() time.Time
	Log           *slog.Logger

	// syncFile makes the frames in [lo, hi) of a segment file durable
	// (default syncRange); the package's tests watch it.
	syncFile func(f *os.File, lo, hi int64) error
	// syncDir makes the spool directory's entries durable (default
	// syncDirectory).
	syncDir func(dir string) error
}

func (o *Options) defaults() {
	if o.SegmentSize <= 0 {
		o.SegmentSize = 8 << 20
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.syncFile == nil {
		o.syncFile = syncRange
	}
	if o.syncDir == nil {
		o.syncDir = syncDirectory
	}
	if o.Linger == 0 {
		o.Linger = 20 * time.Millisecond
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 100 * time.Millisecond
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(5*time.Second, o.RetryMin)
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Second
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Spool is one instance's audit spool: a directory of segment files.
type Spool struct {
	dir  string
	id   uuid.UUID
	sink Sink
	opts Options
	lock *os.File // holds the directory's flock while open

	mu sync.Mutex // the writer side: everything below up to written
	// file and mem are the active segment, the last of segments, and its
	// shared mapping, len(mem) bytes; nil when no segment is mapped (after
	// a failed reservation, and once closed).
	file     *os.File
	mem      []byte
	standby  *standby   // the next segment, made ready off the request path (standby.go)
	toSeal   []sealJob  // retired segments the preparer has not sealed yet
	segments []*segment // oldest first; the last one is being written
	nextSeq  uint64
	// reserved is the room in the active segment held for records not
	// written yet (Reserve): other records leave it free, and a roll
	// keeps the active segment until the next one is ready, so that the
	// room held cannot be lost with it.
	reserved int64
	closed   bool
	broken   error // a write that could not be undone; Record refuses from then on
	// unwritable mirrors closed and broken for Writable, which every
	// reveal calls: it must not take mu.
	unwritable atomic.Pointer[error]
	// failing is set by a segment that could not be reserved (a full
	// disk): Writable refuses until a probe reserves one.
	failing atomic.Pointer[failure]

	written atomic.Uint64 // last sequence number whose frame is complete on disk
	shipped atomic.Uint64 // last sequence number the sink has committed
	// dirSynced is the newest segment whose name the shipper has made
	// durable (syncFrames); only the shipper goroutine uses it.
	dirSynced string

	wake     chan struct{} // cap 1: records are waiting
	urgent   chan struct{} // cap 1: a Flush is waiting; ship without lingering
	pmu      sync.Mutex
	progress chan struct{} // closed (and replaced) whenever shipped moves
	shipErr  atomic.Pointer[error]

	stop chan struct{}
	done chan struct{}

	prepWake chan struct{} // cap 1: a roll took the standby or retired a segment
	prepDone chan struct{}
}

// failure is a reservation that failed, and when Writable may probe
// again.
type failure struct {
	err   error
	probe time.Time
	need  int64 // the frame that needed the segment
}

// segment is one file, named after the sequence number of its first record.
type segment struct {
	first uint64
	path  string
	size  int64  // bytes of complete frames (guarded by Spool.mu)
	last  uint64 // sequence number of its last frame, 0 when empty
	holes []hole // records missing from it, found by Open until repair fills them
}

// ID names the spool in the sink's checkpoints.
func (s *Spool) ID() uuid.UUID { return s.id }

// Record spools e and returns once it is written (see the package comment
// for what that guarantees). It never blocks on the database, and keeps
// nothing of e once it returns.
func (s *Spool) Record(_ context.Context, e vaultproxy.AuditEvent) error {
	return s.record(e, 0)
}

// record is Record for a record that held bytes were reserved for
// (Reserve); they are given back whatever happens.
func (s *Spool) record(e vaultproxy.AuditEvent, held int64) error {
	if e.OccurredAt.IsZero() {
		e.OccurredAt = s.opts.Now()
	}
	fr, err := encodeFrame(e)
	if err != nil {
		s.release(held)
		return err
	}
	defer putFrame(fr)

	s.mu.Lock()
	s.reserved -= held
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.broken != nil {
		err := s.broken
		s.mu.Unlock()
		return err
	}
	seq := s.nextSeq
	sealFrame(fr.b, seq)
	n := int64(len(fr.b))
	seg, err := s.room(seq, n)
	if err != nil {
		s.failing.Store(&failure{err: err, probe: s.opts.Now().Add(s.opts.ProbeInterval), need: n})
		s.mu.Unlock()
		s.opts.Log.Error("audit spool: a record could not be written; card data is not revealed until the spool can write again",
			"action", e.Action, "request_id", e.RequestID, "err", err)
		return err
	}
	copy(s.mem[seg.size:], fr.b)
	seg.size += n
	seg.last = seq
	s.nextSeq++
	s.written.Store(seq)
	if s.failing.Load() != nil {
		s.failing.Store(nil) // a segment was reserved for this record: there is room
	}
	s.mu.Unlock()

	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// room returns the active segment once it has need bytes free besides
// the room reserved in it, rolling to the next segment (seq its first
// record) when it has not. Called with mu held.
func (s *Spool) room(seq uint64, need int64) (*segment, error) {
	seg := s.segments[len(s.segments)-1]
	if seg.size+s.reserved+need <= int64(len(s.mem)) {
		return seg, nil
	}
	return s.roll(seq, s.reserved+need)
}

// roll makes the next segment, whose first record is seq, with room for
// at least need bytes (the standby segment when one is ready, else one
// reserved here), and then retires the active one (the preparer seals
// it). A failure leaves the active segment as it was, with the room
// reserved in it, and the next record (or probe) tries again. An empty
// tail (a new directory, a reservation that failed, a frame larger than
// the space) is reserved again under its own name rather than followed
// by a second segment starting at the same record; that needs it
// unmapped first, so it is refused while room in it is reserved. Called
// with mu held.
func (s *Spool) roll(seq uint64, need int64) (*segment, error) {
	seg := s.segments[len(s.segments)-1]
	if seg.size == 0 {
		if s.reserved > 0 {
			return nil, errReservedTooLarge
		}
		// The empty tail is mapped again under its own name: seal it now,
		// not later over the new mapping.
		if err := s.seal(); err != nil {
			s.opts.Log.Warn("audit spool: an empty segment could not be sealed", "err", err)
		}
		if err := s.mapSegment(seg, false, max(s.opts.SegmentSize, need), false); err != nil {
			return nil, err
		}
		return seg, nil
	}
	next := &segment{first: seq, path: filepath.Join(s.dir, segmentName(seq))}
	f, mem, ok := s.takeStandby(next, need)
	if !ok {
		var err error
		if f, mem, err = s.reserveSegment(next, true, max(s.opts.SegmentSize, need), false); err != nil {
			return nil, err
		}
	}
	s.retire()
	s.file, s.mem = f, mem
	s.segments = append(s.segments, next)
	return next, nil
}

// errReservedTooLarge is a record that does not fit beside the room
// reserved in an empty segment: more than a segment's worth is held.
var errReservedTooLarge = errors.New("auditspool: the reserved records and this one do not fit in a segment")

// DetailRoom is the room Reserve holds for what a record gets after the
// access it records: its outcome and detail (a forward's placeholder
// names, host, method, status, duration and authentication ids take a
// few hundred bytes). A record that outgrows its room is still written
// when the active segment has space, and otherwise needs the next one,
// as a record without a reservation does.
const DetailRoom = 4 << 10

// recordOverhead bounds a record's member names, punctuation and time.
const recordOverhead = 192

// Reserve holds room in the active segment for the record of an access
// that is about to happen: e as known before it, and DetailRoom for its
// outcome and detail. When the active segment has no room for it the
// next segment is reserved now, and a failure (a full disk) is returned
// and makes Writable refuse, as a failed Record does: the access is
// refused instead of happening unrecorded. Reservation.Record writes the
// record into the room.
func (s *Spool) Reserve(e vaultproxy.AuditEvent) (vaultproxy.AuditReservation, error) {
	if err := s.Writable(); err != nil {
		return nil, err
	}
	// JSON writes a byte of text as at most six ("\u00XX"); a token is
	// 36 characters, its quotes and a comma.
	text := len(e.Actor) + len(e.MerchantAccountID) + len(e.Action) + len(e.Purpose) + len(e.RequestID)
	n := int64(frameHeader + recordOverhead + 6*text + 39*len(e.Tokens) + DetailRoom)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.broken != nil {
		return nil, s.broken
	}
	if _, err := s.room(s.nextSeq, n); err != nil {
		if s.broken == nil {
			s.failing.Store(&failure{err: err, probe: s.opts.Now().Add(s.opts.ProbeInterval), need: n})
		}
		s.opts.Log.Error("audit spool: no room for the record of an access; card data is not revealed until there is",
			"action", e.Action, "request_id", e.RequestID, "err", err)
		return nil, err
	}
	s.reserved += n
	return &Reservation{s: s, n: n}, nil
}

// Reservation is room held in the spool for one record (Reserve). It is
// used by one goroutine, the request's.
type Reservation struct {
	s *Spool
	n int64 // bytes held; 0 once used or released
}

// Record writes e into the room held for it, and returns as Spool.Record
// does. A second call writes as Spool.Record does.
func (r *Reservation) Record(_ context.Context, e vaultproxy.AuditEvent) error {
	n := r.n
	r.n = 0
	return r.s.record(e, n)
}

// Release gives back the room when no record is written into it; after
// Record it does nothing.
func (r *Reservation) Release() {
	n := r.n
	r.n = 0
	r.s.release(n)
}

func (s *Spool) release(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.reserved -= n
	s.mu.Unlock()
}

// Writable reports whether Record can currently write: nil, or why not
// (the readiness check). Callers that are about to reveal card data
// Reserve room for its record instead, which also finds a full active
// segment that the disk has no room to follow.
//
// After a segment could not be reserved it refuses until a probe (at most
// every ProbeInterval) reserves one.
func (s *Spool) Writable() error {
	if p := s.unwritable.Load(); p != nil {
		return *p
	}
	f := s.failing.Load()
	if f == nil {
		return nil
	}
	if s.opts.Now().Before(f.probe) {
		return f.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed // a probe now would map a segment Close has sealed
	}
	if s.broken != nil {
		return s.broken
	}
	// Another caller may have probed, or a record been written, meanwhile.
	if f = s.failing.Load(); f == nil {
		return nil
	} else if s.opts.Now().Before(f.probe) {
		return f.err
	}
	if err := s.probe(f.need); err != nil {
		err = fmt.Errorf("auditspool: still cannot write: %w", err)
		if s.broken == nil {
			s.failing.Store(&failure{err: err, probe: s.opts.Now().Add(s.opts.ProbeInterval), need: f.need})
		}
		return err
	}
	s.failing.Store(nil)
	s.opts.Log.Info("audit spool: writable again")
	return nil
}

// probe tries what failed: making room for a frame of need bytes, in the
// active segment or a new one. A new one is kept as the active segment;
// it starts at the next sequence number, so none is skipped. Called with
// mu held.
func (s *Spool) probe(need int64) error {
	_, err := s.room(s.nextSeq, need)
	return err
}

// setBroken stops the spool taking records. Called with mu held.
func (s *Spool) setBroken(err error) {
	s.broken = err
	s.unwritable.Store(&err)
}

// Flush waits until every record written before the call is committed in
// the sink: the read-your-writes step before the audit log is queried.
func (s *Spool) Flush(ctx context.Context) error {
	target := s.written.Load()
	for _, ch := range []chan struct{}{s.urgent, s.wake} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	for {
		s.pmu.Lock()
		ch := s.progress
		s.pmu.Unlock()
		if s.shipped.Load() >= target {
			return nil
		}
		select {
		case <-ch:
		case <-s.done:
			if s.shipped.Load() >= target {
				return nil
			}
			return ErrClosed
		case <-ctx.Done():
			err := ctx.Err()
			if p := s.shipErr.Load(); p != nil {
				err = fmt.Errorf("%w (last shipment: %v)", err, *p)
			}
			return err
		}
	}
}

// Backlog is how many written records the sink has not committed yet.
func (s *Spool) Backlog() uint64 {
	w, sh := s.written.Load(), s.shipped.Load()
	if sh >= w {
		return 0
	}
	return w - sh
}

// Close stops taking records, keeps shipping for up to DrainTimeout, and
// closes the files. Whatever is not shipped by then stays in the spool for
// the next start.
func (s *Spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	closed := ErrClosed
	s.unwritable.Store(&closed)
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	<-s.prepDone

	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropStandby()
	err := s.seal()
	if n := s.Backlog(); n > 0 {
		s.opts.Log.Warn("audit spool closed with records not yet in the database; the next start ships them", "records", n)
	}
	return errors.Join(err, unlock(s.lock))
}

// The frame on disk:
//
//	[0:4]   payload length n, big-endian
//	[4:8]   CRC-32C of bytes [8:16+n]
//	[8:16]  sequence number, big-endian
//	[16:]   payload: the event as JSON (record)
const (
	frameHeader = 16
	maxPayload  = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type frame struct{ b []byte }

var framePool = sync.Pool{New: func() any { return &frame{b: make([]byte, 0, 1024)} }}

func putFrame(f *frame) {
	if cap(f.b) <= 64<<10 {
		framePool.Put(f)
	}
}

// encodeFrame builds a frame for e with its sequence number and checksum
// left blank (sealFrame fills them under the writer's lock).
func encodeFrame(e vaultproxy.AuditEvent) (*frame, error) {
	f := framePool.Get().(*frame)
	var zero [frameHeader]byte
	b, err := appendRecord(append(f.b[:0], zero[:]...), e)
	f.b = b
	if err != nil {
		putFrame(f)
		return nil, err
	}
	n := len(b) - frameHeader
	if n > maxPayload {
		putFrame(f)
		return nil, fmt.Errorf("auditspool: event of %d bytes is over the %d-byte limit", n, maxPayload)
	}
	binary.BigEndian.PutUint32(b[0:4], uint32(n))
	return f, nil
}

func sealFrame(b []byte, seq uint64) {
	binary.BigEndian.PutUint64(b[8:16], seq)
	binary.BigEndian.PutUint32(b[4:8], crc32.Checksum(b[8:], castagnoli))
}

// errTorn is a frame cut short or failing its checksum.
var errTorn = errors.New("torn or damaged frame")

// nextFrame parses the frame at the start of b. It returns the number of
// bytes it took, or 0 and nil when b holds only part of a frame.
func nextFrame(b []byte) (n int, seq uint64, payload []byte, err error) {
	if len(b) < frameHeader {
		return 0, 0, nil, nil
	}
	size := binary.BigEndian.Uint32(b[0:4])
	if size == 0 || size > maxPayload {
		return 0, 0, nil, errTorn
	}
	end := frameHeader + int(size)
	if len(b) < end {
		return 0, 0, nil, nil
	}
	if crc32.Checksum(b[8:end], castagnoli) != binary.BigEndian.Uint32(b[4:8]) {
		return 0, 0, nil, errTorn
	}
	return end, binary.BigEndian.Uint64(b[8:16]), b[frameHeader:end], nil
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d.seg", first) }
