package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/pgtext"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/tidwall/gjson"
)

// AuditCheckpoint returns the last sequence number of spool stored in
// audit_events (0 for a new spool): auditspool.Sink.
func (db *DB) AuditCheckpoint(ctx context.Context, spool uuid.UUID) (uint64, error) {
	var seq int64
	err := db.Pool.QueryRow(ctx, `SELECT shipped_seq FROM audit_spool_checkpoints WHERE spool_id = $1`, spool).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return uint64(seq), err
}

// ShipAudit stores a spool's batch and moves its checkpoint from b.Prev to
// b.Last in one transaction, so both commit or neither; when the
// checkpoint is not at b.Prev nothing is stored
// (auditspool.ErrCheckpointMoved). Each record keeps the time it was
// spooled; ids follow the spool's order, and the records join the audit
// chain in that order (auditchain.go): the chain's head is locked from
// the checkpoint's move to the commit, so every instance's batches append
// one after the other.
//
// The records go in through binary COPY, as rows written here from the
// spooled JSON (appendCopyRows), so that PostgreSQL, on the same cores as
// the requests being audited, parses nothing but the json detail
// (BenchmarkShipAudit; BENCHMARKS.md, "Audit spool and shipper").
func (db *DB) ShipAudit(ctx context.Context, spool uuid.UUID, b auditspool.Batch) error {
	bp := db.copyBufs.Get()
	buf, _ := bp.(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer db.copyBufs.Put(buf)
	rows, n, err := appendCopyRows((*buf)[:0], b.Records)
	*buf = rows
	if err != nil {
		return err
	}
	if n != b.Count() {
		return fmt.Errorf("postgres: audit batch %d-%d holds %d records", b.Prev+1, b.Last, n)
	}

	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// The checkpoint row is locked until the commit: a second shipper of the
	// same spool waits here, then finds the checkpoint moved. The audit
	// chain's head is locked next, in the same round trip, and held as
	// long: other instances' appends wait for this batch's commit.
	var lock pgx.Batch
	lock.Queue(moveCheckpointSQL, spool, int64(b.Prev), int64(b.Last))
	lock.Queue(lockChainSQL)
	br := tx.SendBatch(ctx, &lock)
	tag, err := br.Exec()
	var head []byte
	if err == nil {
		err = br.QueryRow().Scan(&head)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return auditspool.ErrCheckpointMoved
	}
	if n == 0 {
		return tx.Commit(ctx)
	}
	h, err := chainHead(head)
	if err != nil {
		return err
	}
	prev, last := linkCopyRows(rows, h)
	tag, err = tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(rows), copyAuditSQL)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != int64(n) {
		return fmt.Errorf("postgres: audit batch %d-%d: %d of %d records stored", b.Prev+1, b.Last, tag.RowsAffected(), n)
	}
	if _, err := tx.Exec(ctx, `UPDATE audit_chain SET prev = $1, head = $2`, prev[:], last[:]); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// moveCheckpointSQL moves a spool's checkpoint from $2 to $3 ($1 the spool
// id), creating it for a spool the database has not seen.
const moveCheckpointSQL = `
	INSERT INTO audit_spool_checkpoints AS c (spool_id, shipped_seq) VALUES ($1, $3)
	ON CONFLICT (spool_id) DO UPDATE SET shipped_seq = EXCLUDED.shipped_seq, updated_at = now()
	WHERE c.shipped_seq = $2`

const copyAuditSQL = `COPY audit_events (chain_prev, occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome,
	request_id, detail, chain_hash) FROM STDIN (FORMAT binary)`

// appendCopyRows appends the rows of records (a JSON array of spooled
// records, see auditspool's record format) to dst in COPY's binary format,
// header and trailer included, and returns how many. A member the format
// does not name is ignored, as additions to the format are allowed; a
// named member of the wrong JSON type refuses the batch.
//
// Binary rather than text: PostgreSQL then parses no timestamp, uuid[] or
// escaped text, and only validates the json detail. A forward's record
// costs it ~25% less CPU (BENCHMARKS.md, "Audit spool and shipper"), on the
// cores the forwards run on.
//
// Records as auditspool writes them are read in one pass by
// appendCanonicalRows; a batch is parsed with gjson from the first record
// that is not in that form on (an older spool's, an edited one), which
// writes the same rows for any record both read.
func appendCopyRows(dst, records []byte) ([]byte, int, error) {
	return appendCopyRowsVia(dst, records, true)
}

// appendCopyRowsVia is appendCopyRows, which with canonical unset parses
// every record with gjson: the tests hold the two to the same output.
func appendCopyRowsVia(dst, records []byte, canonical bool) ([]byte, int, error) {
	s := unsafe.String(unsafe.SliceData(records), len(records)) // read here only
	arr := gjson.Parse(s)
	if !arr.IsArray() {
		return dst, 0, errors.New("postgres: an audit batch is not a JSON array")
	}
	dst = append(dst, copyBinaryHeader...)
	n, done := 0, false
	if canonical {
		dst, n, done = appendCanonicalRows(dst, s)
	}
	var err error
	if !done {
		dst, n, err = appendParsedRows(dst, arr, n)
	}
	return binary.BigEndian.AppendUint16(dst, 0xffff), n, err // the trailer: a field count of -1
}

// appendParsedRows appends the rows of the records of arr after its first
// skip, which are already written, and returns the count of all.
func appendParsedRows(dst []byte, arr gjson.Result, skip int) ([]byte, int, error) {
	n := 0
	var err error
	arr.ForEach(func(_, rec gjson.Result) bool {
		if n < skip {
			n++
			return true
		}
		if !rec.IsObject() {
			err = fmt.Errorf("postgres: audit record %d is not a JSON object", n+1)
			return false
		}
		var f [len(copyColumns)]gjson.Result
		rec.ForEach(func(k, v gjson.Result) bool {
			for i, c := range copyColumns {
				if c.member == k.Str {
					f[i] = v
					break
				}
			}
			return true
		})
		dst = beginCopyRow(dst)
		for i, c := range copyColumns {
			if dst, err = c.kind.appendField(dst, f[i], c.required); err != nil {
				err = fmt.Errorf("postgres: audit record %d, %s: %w", n+1, c.member, err)
				return false
			}
		}
		dst = endCopyRow(dst)
		n++
		return true
	})
	return dst, n, err
}

// copyBinaryHeader opens a binary COPY stream: the signature, no flags, no
// header extension.
const copyBinaryHeader = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// copyColumns are the record's members in copyAuditSQL's column order,
// between its two chain columns (auditchain.go): a record's content. A
// required member that is absent (or JSON null) is sent as NULL, which the
// table refuses; an optional one is the empty value the record omits.
var copyColumns = [...]struct {
	member   string
	kind     copyKind
	required bool
}{
	{"at", copyTimestamptz, true}, {"actor", copyText, true}, {"merchant_account_id", copyText, true},
	{"action", copyText, true}, {"tokens", copyUUIDArray, false}, {"purpose", copyText, false},
	{"outcome", copyText, true}, {"request_id", copyText, false}, {"detail", copyJSON, false},
}

// copyKind is how a member becomes a field of binary COPY: a 32-bit
// length (-1 for NULL), then the column type's binary form.
//
// The time and the uuid[] are encoded here rather than by pgx's codecs
// (pgtype.Map.Encode), which write the same bytes but box every value:
// 9 allocations and ~0.45 us more per record (BenchmarkAppendCopyRows
// 1.14 -> 1.6 us), on the cores the forwards share. Tests read every
// field back through PostgreSQL, including times at years 1 and 9999.
type copyKind uint8

const (
	copyText        copyKind = iota // a JSON string, stored as its UTF-8 bytes
	copyTimestamptz                 // an RFC 3339 string, stored to the microsecond
	copyUUIDArray                   // a JSON array of UUID strings
	copyJSON                        // any JSON, stored as json (migration 007)
)

// uuidOID is the element type a binary uuid[] names.
const uuidOID = 2950

// pgEpochUnix is where binary timestamps count from, 2000-01-01 UTC, in
// Unix seconds.
const pgEpochUnix = 946_684_800

func (k copyKind) appendField(dst []byte, v gjson.Result, required bool) ([]byte, error) {
	if !v.Exists() || v.Type == gjson.Null {
		if required {
			return binary.BigEndian.AppendUint32(dst, 0xffffffff), nil // NULL
		}
		v = gjson.Result{}
	}
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	switch k {
	case copyText:
		if v.Exists() && v.Type != gjson.String {
			return dst, errors.New("not a JSON string")
		}
		// U+0000 and invalid UTF-8, which text refuses, become U+FFFD. A
		// refused field fails its whole batch, and the shipper retries a
		// batch until it is stored, so one such value (a token's jti, a
		// request id: both chosen by callers) would stop the trail for
		// every merchant.
		dst = pgtext.AppendStorable(dst, v.Str)
	case copyTimestamptz:
		if v.Type != gjson.String {
			return dst, errors.New("not a JSON string")
		}
		t, err := time.Parse(time.RFC3339Nano, v.Str)
		if err != nil {
			return dst, errors.New("not an RFC 3339 time")
		}
		dst = appendTimestamptz(dst, t)
	case copyUUIDArray:
		var err error
		if dst, err = appendUUIDArray(dst, v); err != nil {
			return dst, err
		}
	case copyJSON:
		raw := v.Raw
		if raw == "" {
			raw = "{}"
		}
		dst = append(dst, raw...) // json's binary form is its text
	}
	return endField(dst, lenAt), nil
}

// endField writes the length of the field whose value follows lenAt.
func endField(dst []byte, lenAt int) []byte {
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// appendTimestamptz writes t, to the microsecond, as a binary timestamptz.
func appendTimestamptz(dst []byte, t time.Time) []byte {
	// From seconds, not a time.Duration, which ends 292 years from the
	// epoch; a spooled record may be dated from year 0 to 9999.
	t = t.Round(time.Microsecond)
	us := (t.Unix()-pgEpochUnix)*1_000_000 + int64(t.Nanosecond()/1000)
	return binary.BigEndian.AppendUint64(dst, uint64(us))
}

// appendUUIDArray writes a JSON array of UUID strings (or nothing, for the
// empty array) as a binary one-dimensional uuid[].
func appendUUIDArray(dst []byte, v gjson.Result) ([]byte, error) {
	if v.Exists() && !v.IsArray() {
		return dst, errors.New("not a JSON array")
	}
	dst, at := beginUUIDArray(dst)
	n := 0
	var err error
	v.ForEach(func(_, t gjson.Result) bool {
		id, perr := uuid.Parse(t.Str)
		if t.Type != gjson.String || perr != nil {
			err = errors.New("a token that is not a UUID string")
			return false
		}
		dst = appendUUIDElement(dst, id)
		n++
		return true
	})
	if err != nil {
		return dst, err
	}
	return endUUIDArray(dst, at, n), nil
}

// beginUUIDArray writes the header of a binary one-dimensional uuid[], to
// be followed by its elements (appendUUIDElement) and completed by
// endUUIDArray with at, where the header starts.
func beginUUIDArray(dst []byte) (_ []byte, at int) {
	at = len(dst)
	dst = binary.BigEndian.AppendUint32(dst, 1) // dimensions
	dst = binary.BigEndian.AppendUint32(dst, 0) // no nulls
	dst = binary.BigEndian.AppendUint32(dst, uuidOID)
	dst = append(dst, 0, 0, 0, 0)               // the length, written by endUUIDArray
	dst = binary.BigEndian.AppendUint32(dst, 1) // lower bound
	return dst, at
}

func appendUUIDElement(dst []byte, id uuid.UUID) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 16)
	return append(dst, id[:]...)
}

// endUUIDArray completes the array begun at with its n elements.
func endUUIDArray(dst []byte, at, n int) []byte {
	if n > 0 {
		binary.BigEndian.PutUint32(dst[at+12:], uint32(n))
		return dst
	}
	// The empty array has no dimensions.
	return binary.BigEndian.AppendUint32(append(dst[:at], 0, 0, 0, 0, 0, 0, 0, 0), uuidOID)
}

// uuidArray passes tokens to pgx as raw 16-byte values: a uuid.UUID is a
// driver.Valuer, which pgx would format to text and parse back per
// element.
func uuidArray(ids []uuid.UUID) [][16]byte {
	out := make([][16]byte, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// auditEventsPage is one page of a merchant account's events, newest
// first, in the page's query order (see pagination.Build); the primary key
// (merchant_account_id, id) answers it (migration 008). An account
// reopened for a new account of the same id (migration 011) starts after
// its floor and its reopening: the id bound keeps the scan off the deleted
// account's events (and drops those an instance with a fast clock stamped
// later than the reopening), and the time bound drops the deleted
// account's last events that were still in an audit spool at the
// reopening (shipped later, so with ids above the floor).
func auditEventsPage(merchantAccountID string, page pagination.Page) (string, []any) {
	where, order, args := page.KeysetID("id", 2, true)
	if where == "" {
		where = "true"
	}
	return auditEventsOf + ` AND ` + where + `
	ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(page.FetchLimit()), append([]any{merchantAccountID}, args...)
}

// auditEventsOf selects the events the merchant account ($1) can read;
// the list and the single read add to its WHERE, so both see the same
// log.
const auditEventsOf = `
	SELECT id, occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome, request_id, detail
	FROM audit_events
	WHERE merchant_account_id = $1
		AND id > coalesce((SELECT audit_floor FROM merchant_account_closures WHERE merchant_account_id = $1), 0)
		AND occurred_at >= coalesce((SELECT reopened_at FROM merchant_account_closures WHERE merchant_account_id = $1), '-infinity')`

func scanAuditEvent(r pgx.Row) (vaultproxy.AuditEvent, error) {
	var e vaultproxy.AuditEvent
	var detail []byte
	var at time.Time
	err := r.Scan(&e.ID, &at, &e.Actor, &e.MerchantAccountID, &e.Action, &e.Tokens, &e.Purpose, &e.Outcome, &e.RequestID, &detail)
	e.OccurredAt = at
	if err == nil && len(detail) > 0 {
		err = json.Unmarshal(detail, &e.Detail)
	}
	return e, err
}

// AuditEvents reads one page of a merchant account's events (newest
// first): up to page.FetchLimit() rows, in the page's query order.
func (db *DB) AuditEvents(ctx context.Context, merchantAccountID string, page pagination.Page) ([]vaultproxy.AuditEvent, error) {
	sql, args := auditEventsPage(merchantAccountID, page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (vaultproxy.AuditEvent, error) { return scanAuditEvent(r) })
}

// AuditEvent reads event id of a merchant account, under the same bounds
// as its list: another account's, or one of a deleted account of the same
// id, is vaultproxy.ErrNotFound.
func (db *DB) AuditEvent(ctx context.Context, merchantAccountID string, id int64) (*vaultproxy.AuditEvent, error) {
	e, err := scanAuditEvent(db.Pool.QueryRow(ctx, auditEventsOf+` AND id = $2`, merchantAccountID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, vaultproxy.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}
