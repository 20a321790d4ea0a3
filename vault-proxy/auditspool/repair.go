package auditspool

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	vaultproxy "github.com/payorch/vault-proxy"
)

// LostAction is the action of a loss marker: a record that was written to
// the spool but is not on disk when it opens again. A machine crash before
// a segment's pages reached the disk leaves such a hole (a record is
// acknowledged once it is in the page cache; SECURITY.md, "Audit log
// durability"), and so does a damaged frame or a segment file removed by
// hand. The marker takes the lost record's number, so the trail keeps
// counting, shows where the loss is and still ships: refusing to start
// would bring none of them back.
const LostAction = "audit.record_lost"

// LostMerchant is the merchant account of a loss marker: no merchant's
// (an account id cannot hold parentheses), since the record's is unknown.
const LostMerchant = "(unknown)"

// hole is the records from..to, inclusive, that no frame holds.
type hole struct{ from, to uint64 }

// scanned is what scanFrames found in a segment's bytes.
type scanned struct {
	end   int    // offset just past the last good frame
	last  uint64 // that frame's sequence number, 0 if none
	holes []hole // records missing between good frames
}

// maxSkip bounds how far a frame found after damage may jump ahead: a
// larger jump is not a frame of this segment (a segment holds at most a
// few hundred thousand), however its checksum reads.
const maxSkip = 1 << 24

// scanFrames walks b's frames, numbered from first. Past a damaged or
// missing frame it looks for the next good one, byte by byte, so that one
// bad frame costs one record, not the rest of the segment; the records
// between are holes. A run of zeros to the end is the unwritten rest of a
// reserved segment. each, if not nil, gets every good frame in order.
func scanFrames(b []byte, first uint64, each func(frame []byte, seq uint64)) scanned {
	want := first
	var sc scanned
	// Found once: asking at every damaged byte whether the rest is zeros
	// made a zeroed stretch cost its length times the segment's.
	data := len(b)
	for data > 0 && b[data-1] == 0 {
		data--
	}
	for off := 0; off < data; {
		n, seq, _, err := nextFrame(b[off:])
		if err == nil && n > 0 && seq >= want && seq-want < maxSkip {
			if seq > want {
				sc.holes = append(sc.holes, hole{want, seq - 1})
			}
			if each != nil {
				each(b[off:off+n], seq)
			}
			sc.last, sc.end, want = seq, off+n, seq+1
			off += n
			continue
		}
		off++
	}
	return sc
}

// repair fills every hole Open found with loss markers, once the sink's
// checkpoint (shipped) is known. Only records above it can be lost: those
// at or below it are stored already (a damaged frame of a shipped record
// costs nothing, and the shipper never reads it again), so that part of a
// hole is left as it is. Records missing before the oldest segment, above
// the checkpoint (a segment removed by hand), get a segment of their own.
func (s *Spool) repair(shipped uint64) error {
	if len(s.segments) > 0 && s.segments[0].first > shipped+1 {
		lost := &segment{first: shipped + 1, path: filepath.Join(s.dir, segmentName(shipped+1)),
			holes: []hole{{shipped + 1, s.segments[0].first - 1}}}
		s.segments = append([]*segment{lost}, s.segments...)
	}
	for _, seg := range s.segments {
		if len(seg.holes) == 0 {
			continue
		}
		var lost []hole
		for _, h := range seg.holes {
			if h.to > shipped {
				lost = append(lost, hole{max(h.from, shipped+1), h.to})
			}
		}
		// Rewritten even when nothing above the checkpoint is lost: the
		// damaged bytes go, and the shipper, which reads frame after
		// frame, never meets them.
		seg.holes = lost
		if err := s.fillHoles(seg); err != nil {
			return err
		}
	}
	return nil
}

// fillHoles rewrites seg with its good frames and a loss marker in place
// of each record of seg.holes, durably (a new file synced, then renamed
// over the old one).
func (s *Spool) fillHoles(seg *segment) error {
	b, err := os.ReadFile(seg.path)
	if err != nil && !os.IsNotExist(err) { // a segment of markers only is new
		return fmt.Errorf("auditspool: %w", err)
	}
	holes, lost := seg.holes, uint64(0)
	out := make([]byte, 0, len(b))
	var markErr error
	// markUpTo writes markers for the holes before seq.
	markUpTo := func(seq uint64) {
		for len(holes) > 0 && holes[0].from < seq && markErr == nil {
			for q := holes[0].from; q <= holes[0].to; q++ {
				if out, markErr = s.appendMarker(out, q); markErr != nil {
					return
				}
				seg.last = max(seg.last, q)
				lost++
			}
			holes = holes[1:]
		}
	}
	scanFrames(b, seg.first, func(frame []byte, seq uint64) {
		markUpTo(seq)
		out = append(out, frame...)
	})
	markUpTo(^uint64(0))
	if markErr != nil {
		return markErr
	}
	if lost == 0 && len(out) == len(b) {
		// Only a gap below the checkpoint, cut out at an earlier start:
		// nothing to rewrite.
		seg.size, seg.holes = int64(len(out)), nil
		return nil
	}
	tmp := seg.path + ".repair"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return fmt.Errorf("auditspool: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, seg.path); err != nil {
		return fmt.Errorf("auditspool: %w", err)
	}
	if err := syncFile(s.dir); err != nil {
		return err
	}
	if lost > 0 {
		s.opts.Log.Error("audit spool: records were lost before they reached the disk (a machine crash), or damaged; each is marked in the trail as "+LostAction,
			"segment", filepath.Base(seg.path), "records", lost, "first", seg.holes[0].from, "last", seg.holes[len(seg.holes)-1].to)
	}
	seg.size, seg.holes = int64(len(out)), nil
	return nil
}

// appendMarker appends the loss marker of record seq as a sealed frame.
func (s *Spool) appendMarker(b []byte, seq uint64) ([]byte, error) {
	f, err := encodeFrame(vaultproxy.AuditEvent{
		OccurredAt: s.opts.Now(), Actor: "vault-proxy", MerchantAccountID: LostMerchant,
		Action: LostAction, Outcome: "lost",
		Detail: map[string]any{"spool_id": s.id.String(), "sequence": strconv.FormatUint(seq, 10)},
	})
	if err != nil {
		return b, err
	}
	defer putFrame(f)
	sealFrame(f.b, seq)
	return append(b, f.b...), nil
}
