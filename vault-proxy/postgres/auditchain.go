package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/pgtext"
)

// The audit chain (migration 013): every record stored since the
// migration carries chain_prev, the chain_hash of the record before it,
// and chain_hash = SHA-256(chain_prev || content), content being its
// copyColumns fields in binary COPY form. audit_chain's row holds the last
// record's two values and is locked by each append until it commits, so
// the records of every instance form one chain in id order.
//
// The shipper writes a batch's rows before it takes the lock
// (appendCopyRows); under the lock it hashes them in order (linkCopyRows),
// ~0.3 us a record, against the COPY's few microseconds. A vaulted card's
// record is chained in the transaction that stores the card, with the
// other cards this process is vaulting at the time (cardbatch.go).

// chainField is a 32-byte bytea as a binary COPY field.
const chainField = 4 + sha256.Size

// copyRowFields is the field count of a COPY row: chain_prev, the
// record's columns, chain_hash (copyAuditSQL).
const copyRowFields = uint16(len(copyColumns) + 2)

// beginCopyRow writes a COPY row's field count and its chain_prev, zeros
// until linkCopyRows writes it: its value and the content fields that
// follow are then what the record's chain_hash hashes, in place.
func beginCopyRow(dst []byte) []byte {
	return appendChainField(binary.BigEndian.AppendUint16(dst, copyRowFields))
}

// endCopyRow completes a COPY row after its content fields: chain_hash,
// zeros until linkCopyRows writes it.
func endCopyRow(dst []byte) []byte {
	return appendChainField(dst)
}

func appendChainField(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, sha256.Size)
	return append(dst, make([]byte, sha256.Size)...)
}

// link writes prev, the previous record's chain_hash, into the first 32
// bytes of rec, which hold a record's content after them, and returns the
// record's chain_hash, SHA-256(chain_prev || content).
func link(rec []byte, prev [sha256.Size]byte) [sha256.Size]byte {
	copy(rec, prev[:])
	return sha256.Sum256(rec)
}

// linkCopyRows chains the rows appendCopyRows wrote (a binary COPY
// stream with at least one row) after head, the chain's head, writing
// each row's chain_prev and chain_hash. It returns the last row's two
// values, the chain's new head.
func linkCopyRows(rows []byte, head [sha256.Size]byte) (prev, last [sha256.Size]byte) {
	last = head
	i := len(copyBinaryHeader)
	for int16(binary.BigEndian.Uint16(rows[i:])) != -1 {
		rec := i + 2 + 4 // chain_prev's value, then the content
		i = rec + sha256.Size
		for range copyColumns {
			// NULL (-1) has no value; rows with one are refused by
			// the table, and the batch with them.
			if l := int32(binary.BigEndian.Uint32(rows[i:])); l > 0 {
				i += int(l)
			}
			i += 4
		}
		prev, last = last, link(rows[rec:i], last)
		copy(rows[i+4:], last[:])
		i += chainField
	}
	return prev, last
}

// lockChainSQL reads the chain's head and locks it until the commit.
const lockChainSQL = `SELECT head FROM audit_chain FOR UPDATE`

// chainHead is the head lockChainSQL read, which migration 013 keeps 32
// bytes long.
func chainHead(v []byte) ([sha256.Size]byte, error) {
	if len(v) != sha256.Size {
		return [sha256.Size]byte{}, errors.New("postgres: the audit chain's head is not a SHA-256 hash")
	}
	return [sha256.Size]byte(v), nil
}

// auditRecord is a stored record's content, as verify reads it.
type auditRecord struct {
	at                               time.Time
	actor, merchantAccountID, action string
	tokens                           []uuid.UUID
	purpose, outcome, requestID      string
	detail                           []byte // JSON text, as stored
}

// appendAuditContent writes r as the shipper writes a record's content:
// copyColumns' fields in binary COPY form.
func appendAuditContent(dst []byte, r *auditRecord) []byte {
	for _, c := range copyColumns {
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		switch c.kind {
		case copyText:
			dst = pgtext.AppendStorable(dst, r.text(c.member))
		case copyTimestamptz:
			dst = appendTimestamptz(dst, r.at)
		case copyUUIDArray:
			var at int
			dst, at = beginUUIDArray(dst)
			for _, t := range r.tokens {
				dst = appendUUIDElement(dst, t)
			}
			dst = endUUIDArray(dst, at, len(r.tokens))
		case copyJSON:
			dst = append(dst, r.detail...)
		}
		dst = endField(dst, lenAt)
	}
	return dst
}

// text is the record's text member named member.
func (r *auditRecord) text(member string) string {
	switch member {
	case "actor":
		return r.actor
	case "merchant_account_id":
		return r.merchantAccountID
	case "action":
		return r.action
	case "purpose":
		return r.purpose
	case "outcome":
		return r.outcome
	case "request_id":
		return r.requestID
	}
	// copyColumns and auditRecord disagree: every verify and vaulting
	// would fail, so the first test does.
	panic("postgres: the audit column " + member + " has no record field")
}

// AuditLink is one record of the audit chain: its id and chain hash.
type AuditLink struct {
	ID   int64
	Hash [sha256.Size]byte
}

// String is the link as ID:HASH (hex), the form ParseAuditLink reads.
func (l AuditLink) String() string { return fmt.Sprintf("%d:%x", l.ID, l.Hash) }

// ParseAuditLink reads ID:HASH, as AuditLink.String writes it.
func ParseAuditLink(s string) (AuditLink, error) {
	id, h, ok := strings.Cut(s, ":")
	var l AuditLink
	n, err := strconv.ParseInt(id, 10, 64)
	raw, herr := hex.DecodeString(h)
	if !ok || err != nil || n < 1 || herr != nil || len(raw) != sha256.Size {
		return AuditLink{}, fmt.Errorf("postgres: an audit link is ID:HASH, a record id and its 64-digit hex chain hash")
	}
	l.ID = n
	copy(l.Hash[:], raw)
	return l, nil
}

// AuditChain is a verified audit chain.
type AuditChain struct {
	// StartedAfter is the last id of the records stored before the chain
	// began (migration 013), which it does not cover.
	StartedAfter int64
	// Records is how many records the chain holds; Head is its last (ID
	// 0 for an empty chain).
	Records int64
	Head    AuditLink
}

// ChainBreakKind says how the audit chain is broken.
type ChainBreakKind string

// The ways a chain breaks, as VerifyAuditChain finds them.
const (
	// BreakChanged: the record's content, or its chain_hash, was changed
	// after it was stored.
	BreakChanged ChainBreakKind = "changed"
	// BreakUnlinked: the record does not follow the one before it: a
	// record between them was removed, or the one before was changed
	// with its hash recomputed, or this one added.
	BreakUnlinked ChainBreakKind = "unlinked"
	// BreakUnchained: a record stored after the chain began has no links.
	BreakUnchained ChainBreakKind = "unchained"
	// BreakTruncated: the chain's head is not its last record's hash:
	// records at its end were removed.
	BreakTruncated ChainBreakKind = "truncated"
	// BreakAnchor: a link recorded elsewhere is not in the chain with its
	// hash: the chain was recomputed, or cut back, since.
	BreakAnchor ChainBreakKind = "anchor"
)

// AuditChainBreak is the first link of the audit chain that does not hold.
type AuditChainBreak struct {
	Kind ChainBreakKind
	// ID is the record where the chain breaks (0 for BreakTruncated: the
	// records after After are gone).
	ID int64
	// After is the last record that verified (0: none).
	After int64
}

func (e *AuditChainBreak) Error() string {
	var what string
	switch e.Kind {
	case BreakChanged:
		what = "its content or hash was changed after it was stored"
	case BreakUnlinked:
		what = "it does not follow the record before it: a record between them was removed or rewritten, or this one was added"
	case BreakUnchained:
		what = "it carries no chain links"
	case BreakTruncated:
		return fmt.Sprintf("audit chain broken after record %d: the chain's head is not that record's hash, so records after it were removed", e.After)
	case BreakAnchor:
		return fmt.Sprintf("audit chain broken at record %d: the anchor's hash is not that record's, so the chain was rewritten or cut back since", e.ID)
	}
	return fmt.Sprintf("audit chain broken at record %d (the last good record is %d): %s", e.ID, e.After, what)
}

// VerifyAuditChain walks the audit chain from its start, in one snapshot,
// and returns it, or the first link that does not hold as an
// *AuditChainBreak (with the chain up to the record before it). Each
// anchor must be a record of the chain with that hash.
//
// Nothing indexes audit_events by id alone (migration 008), so PostgreSQL
// sorts the chain's records: on a large table, a sort on disk.
func (db *DB) VerifyAuditChain(ctx context.Context, anchors ...AuditLink) (AuditChain, error) {
	var c AuditChain
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var head []byte
		if err := tx.QueryRow(ctx, `SELECT started_after, head FROM audit_chain`).Scan(&c.StartedAfter, &head); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT id, occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail::text,
			       chain_prev, chain_hash
			FROM audit_events WHERE id > $1 ORDER BY id`, c.StartedAfter)
		if err != nil {
			return err
		}
		defer rows.Close()
		wanted := map[int64][sha256.Size]byte{}
		for _, a := range anchors {
			wanted[a.ID] = a.Hash
		}
		var r auditRecord
		var id int64
		var prev, hash []byte
		rec := make([]byte, sha256.Size, 1024) // chain_prev, then the content (link)
		for rows.Next() {
			if err := rows.Scan(&id, &r.at, &r.actor, &r.merchantAccountID, &r.action, &r.tokens, &r.purpose, &r.outcome,
				&r.requestID, &r.detail, &prev, &hash); err != nil {
				return err
			}
			broke := func(kind ChainBreakKind) error { return &AuditChainBreak{Kind: kind, ID: id, After: c.Head.ID} }
			switch {
			case len(prev) != sha256.Size || len(hash) != sha256.Size:
				return broke(BreakUnchained)
			case !bytes.Equal(prev, c.Head.Hash[:]):
				return broke(BreakUnlinked)
			}
			rec = appendAuditContent(rec[:sha256.Size], &r)
			h := link(rec, c.Head.Hash)
			if !bytes.Equal(hash, h[:]) {
				return broke(BreakChanged)
			}
			if a, ok := wanted[id]; ok {
				if a != h {
					return &AuditChainBreak{Kind: BreakAnchor, ID: id, After: c.Head.ID}
				}
				delete(wanted, id)
			}
			c.Records++
			c.Head = AuditLink{ID: id, Hash: h}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !bytes.Equal(head, c.Head.Hash[:]) {
			return &AuditChainBreak{Kind: BreakTruncated, After: c.Head.ID}
		}
		if len(wanted) > 0 {
			missing := slices.Sorted(maps.Keys(wanted))
			return &AuditChainBreak{Kind: BreakAnchor, ID: missing[0], After: c.Head.ID}
		}
		return nil
	})
	var b *AuditChainBreak
	if err != nil && !errors.As(err, &b) {
		return AuditChain{}, fmt.Errorf("postgres: verify the audit chain: %w", err)
	}
	return c, err
}
