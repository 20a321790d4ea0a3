// Package pagination is the keyset cursor pagination every list of both
// services uses (docs/api-conventions.md, "Pagination"): `limit` (default
// 20, 1..100) and an opaque, tamper-evident `cursor`; the response is the
// page envelope
//
//	{"items": [...], "limit": 20, "next_cursor": "..." | null, "previous_cursor": "..." | null}
//
// # Order and stability
//
// Lists are ordered newest first by a keyset (created_at, id): a cursor
// holds the boundary row's key, never an offset, so rows inserted while a
// client walks a list never shift a page (no duplicates, no gaps among the
// rows that existed when the walk started; new rows sort before the first
// page). A list may instead use a single monotonic key, newest or oldest
// first: leave Key.Time zero, put the key in Key.ID and use KeysetID.
//
// # Cursors
//
// A cursor is base64url (no padding) of
//
//	version(1) | flags(1: direction, has-time) | unix micros(8) | boundary id | mac(16)
//
// where mac is HMAC-SHA256, truncated to 128 bits, over the payload, the
// list name and a binding the handler chooses (the merchant account and a
// digest of the filters, see Binding). A cursor changed in any bit, made
// with another key, or presented to another list, another merchant account
// or with other filters fails with 400 on `cursor`. Cursors carry no expiry;
// they live as long as the key. The key is per service and the same on all
// of its instances (CORE_API_CURSOR_KEY, VAULT_PROXY_CURSOR_KEY, or their
// _FILE forms, at least 32 bytes); when it is not configured the service
// generates a random one at start, and cursors then do not survive a
// restart or work across instances behind one load balancer.
//
// # Use in a handler and a store
//
//	page, err := d.Cursors.ParseRequest(r.URL.Query(), "buyers",
//	    pagination.Binding(merchantID, search, externalID))
//	if err != nil { return err } // *apierror.Error, 400 with a detail on limit or cursor
//
//	// store: one query, with the index (merchant_account_id, created_at, id)
//	where, order, args := page.Keyset("created_at", "id", 2)
//	sql := "SELECT ... FROM buyers WHERE merchant_account_id = $1"
//	if where != "" { sql += " AND " + where }
//	sql += " ORDER BY " + order + " LIMIT " + strconv.Itoa(page.FetchLimit())
//	rows := ... // up to FetchLimit rows, in query order; do not trim or reverse
//
//	env := pagination.Build(page, rows, func(b Buyer) pagination.Key {
//	    return pagination.Key{Time: b.CreatedAt, ID: b.ID}
//	})
//	return WriteJSON(w, 200, env)
//
// Build trims the extra row (which only says there is more), reverses a
// backward page into display order and makes the two cursors. A page
// reached through a cursor always has a previous (or, going backward, a
// next) cursor, pointing at rows beyond its boundary even if they have since
// been deleted; a walk from the first page forward, or back to it, ends with
// null cursors exactly at the ends.
package pagination

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/secret"
)

// Limits of the limit parameter.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	MinKeyLen    = 32 // bytes of a cursor key

	maxCursorLen = 512 // characters; longer is refused before decoding
	maxIDLen     = 200 // bytes of a boundary id
	macLen       = 16
	version      = 1

	flagPrevious = 1 << 0
	flagTime     = 1 << 1
)

// Direction is the way a page is read from its boundary.
type Direction uint8

const (
	// Next reads older rows: after the boundary in display order.
	Next Direction = iota
	// Previous reads newer rows: before the boundary in display order.
	Previous
)

// Key is a row's position in a list: (Time, ID), compared in that order.
type Key struct {
	Time time.Time // truncated to microseconds, as PostgreSQL stores it
	ID   string
}

// Page is a parsed list request.
type Page struct {
	Limit     int       // 1..MaxLimit
	Direction Direction // Next for the first page
	// Boundary is nil on the first page; otherwise rows strictly beyond it
	// in Direction are wanted.
	Boundary *Key

	codec *Codec
	list  string
	bind  string
}

// FetchLimit is Limit+1: fetching one row more tells whether there is more.
func (p Page) FetchLimit() int { return p.Limit + 1 }

// Keyset returns the SQL for this page over a (timeCol, idCol) keyset
// ordered newest first: a predicate (empty on the first page; otherwise a
// row comparison with placeholders $firstArg and $firstArg+1), the ORDER BY
// list (descending for Next, ascending for Previous, so the LIMIT applies
// at the boundary) and the arguments for the placeholders. With an index on
// (merchant_account_id, timeCol, idCol) the row comparison is an index
// condition. Qualify the columns ("buyers.id") when the select list has an
// output column of the same name (such as id::text AS id): ORDER BY would
// otherwise sort by that expression instead of following the index.
func (p Page) Keyset(timeCol, idCol string, firstArg int) (where, orderBy string, args []any) {
	cmp, dir := p.order(true)
	orderBy = timeCol + " " + dir + ", " + idCol + " " + dir
	if p.Boundary == nil {
		return "", orderBy, nil
	}
	where = "(" + timeCol + ", " + idCol + ") " + cmp + " ($" + strconv.Itoa(firstArg) + ", $" + strconv.Itoa(firstArg+1) + ")"
	return where, orderBy, []any{p.Boundary.Time, p.Boundary.ID}
}

// KeysetID is Keyset for a list ordered by one unique column whose order
// is creation order (a UUIDv7 id, a sequence), newest or oldest first.
// The key is in Key.ID (Key.Time stays zero), passed as text in the one
// placeholder $firstArg; PostgreSQL reads it as the column's type.
func (p Page) KeysetID(col string, firstArg int, newestFirst bool) (where, orderBy string, args []any) {
	cmp, dir := p.order(newestFirst)
	orderBy = col + " " + dir
	if p.Boundary == nil {
		return "", orderBy, nil
	}
	return col + " " + cmp + " $" + strconv.Itoa(firstArg), orderBy, []any{p.Boundary.ID}
}

// order is the comparison with the boundary and the sort direction that
// read this page's rows nearest the boundary first, so that the LIMIT
// applies there.
func (p Page) order(newestFirst bool) (cmp, dir string) {
	if newestFirst == (p.Direction == Next) {
		return "<", "DESC"
	}
	return ">", "ASC"
}

// Envelope is the page response.
type Envelope[T any] struct {
	Items          []T     `json:"items"`
	Limit          int     `json:"limit"`
	NextCursor     *string `json:"next_cursor"`
	PreviousCursor *string `json:"previous_cursor"`
}

// Build makes the envelope from rows as the store fetched them: at most
// FetchLimit rows, in the order Keyset's ORDER BY gives. key returns a
// row's keyset position. The caller hands rows over: the items are rows
// itself, trimmed and, going backward, reversed in place, not a copy (a
// page is kilobytes, copied through the GC's write barriers, on every
// list request).
func Build[T any](p Page, rows []T, key func(T) Key) Envelope[T] {
	hasMore := len(rows) > p.Limit
	if hasMore {
		rows = rows[:p.Limit:p.Limit]
	}
	items := rows
	if items == nil {
		items = []T{}
	}
	env := Envelope[T]{Items: items, Limit: p.Limit}
	if p.codec == nil {
		return env // a Page not from ParseRequest: no cursors can be made
	}
	mk := func(d Direction, k Key) *string {
		s := p.codec.encode(d, k, p.list, p.bind)
		return &s
	}
	switch p.Direction {
	case Next:
		if hasMore {
			env.NextCursor = mk(Next, key(items[len(items)-1]))
		}
		if p.Boundary != nil {
			b := *p.Boundary
			if len(items) > 0 {
				b = key(items[0])
			}
			env.PreviousCursor = mk(Previous, b)
		}
	case Previous:
		slices.Reverse(items)
		if hasMore {
			env.PreviousCursor = mk(Previous, key(items[0]))
		}
		b := *p.Boundary
		if len(items) > 0 {
			b = key(items[len(items)-1])
		}
		env.NextCursor = mk(Next, b)
	}
	return env
}

// Codec makes and checks cursors with one instance key.
type Codec struct {
	key []byte
	// macs holds *macState for reuse: every list page makes a cursor or
	// two and a page reached through one checks it, and a fresh HMAC
	// hashes the padded key again (two SHA-256 blocks) and allocates its
	// state every time.
	macs sync.Pool
}

// macState is an HMAC-SHA256 keyed with the codec's key, which keeps the
// state after the padded key from its first Reset on (crypto/hmac), and
// scratch space for a cursor's bytes.
type macState struct {
	h   hash.Hash
	buf []byte
}

// NewCodec returns service's codec keyed with key (at least MinKeyLen
// bytes). The MAC key is derived from both, so one secret given to two
// services by mistake still makes cursors that only their own service
// accepts.
func NewCodec(service string, key []byte) (*Codec, error) {
	if len(key) < MinKeyLen {
		return nil, errors.New("pagination: cursor key must be at least 32 bytes")
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("payorch " + service + " cursor v1"))
	c := &Codec{key: m.Sum(nil)}
	c.macs.New = func() any {
		return &macState{h: hmac.New(sha256.New, c.key), buf: make([]byte, 0, 2*(10+maxIDLen+macLen))}
	}
	return c, nil
}

// RandomCodec returns a codec with a fresh random key: its cursors die with
// the process.
func RandomCodec(service string) *Codec {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	c, _ := NewCodec(service, k)
	return c
}

// Binding joins the parts that scope a list's cursors (merchant account,
// filter values) unambiguously: each part is length-prefixed.
func Binding(parts ...string) string {
	return string(appendBinding(make([]byte, 0, 64), parts...))
}

// appendBinding appends Binding(parts...) to b.
func appendBinding(b []byte, parts ...string) []byte {
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// ParseRequest reads `limit` and `cursor` from q. list names the list
// ("buyers") and binding scopes it (see Binding); a cursor made for another
// list or binding is refused. Errors are *apierror.Error 400 with a detail
// on the query parameter. An empty cursor is the first page.
func (c *Codec) ParseRequest(q url.Values, list, binding string) (Page, error) {
	p := Page{Limit: DefaultLimit, Direction: Next, codec: c, list: list, bind: binding}
	if vs, ok := q["limit"]; ok {
		n, err := strconv.Atoi(vs[0])
		if len(vs) != 1 || err != nil || n < 1 || n > MaxLimit {
			return Page{}, apierror.BadRequest("invalid limit", apierror.Detail{
				Location: apierror.LocationQuery, Pointer: "limit",
				Message: "must be one integer from 1 to 100", Type: "value_error.number.range",
			})
		}
		p.Limit = n
	}
	vs := q["cursor"]
	if len(vs) > 1 {
		return Page{}, errCursor
	}
	if len(vs) == 0 || vs[0] == "" {
		return p, nil
	}
	d, k, ok := c.decode(vs[0], list, binding)
	if !ok {
		return Page{}, errCursor
	}
	p.Direction, p.Boundary = d, &k
	return p, nil
}

var errCursor = apierror.BadRequest("invalid cursor", apierror.Detail{
	Location: apierror.LocationQuery, Pointer: "cursor",
	Message: "not a cursor of this list: use next_cursor or previous_cursor unchanged, with the same filters", Type: "value_error.cursor",
})

// appendMAC appends to b, which holds a cursor's payload, its MAC for
// list and binding: HMAC-SHA256 over the payload and Binding(list,
// binding), truncated to macLen bytes.
func (m *macState) appendMAC(b []byte, list, binding string) []byte {
	n := len(b)
	b = appendBinding(b, list, binding)
	m.h.Reset()
	m.h.Write(b)
	b = m.h.Sum(b)
	return append(b[:n], b[len(b)-sha256.Size:][:macLen]...)
}

// cursorEncoding is a cursor's base64, strict: unused trailing bits must
// be zero, so that a cursor has one spelling. Made once, as Strict
// returns a copy of the encoding.
var cursorEncoding = base64.RawURLEncoding.Strict()

func (c *Codec) encode(d Direction, k Key, list, binding string) string {
	m := c.macs.Get().(*macState)
	defer c.macs.Put(m)
	var flags byte
	if d == Previous {
		flags |= flagPrevious
	}
	var micros int64
	if !k.Time.IsZero() {
		flags |= flagTime
		micros = k.Time.UnixMicro()
	}
	b := append(m.buf[:0], version, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(micros))
	b = append(b, k.ID...)
	b = m.appendMAC(b, list, binding)
	n := len(b)
	b = cursorEncoding.AppendEncode(b, b) // the text after the bytes, in the same scratch space
	m.buf = b[:0]
	return string(b[n:])
}

func (c *Codec) decode(s, list, binding string) (Direction, Key, bool) {
	// base64's decoders skip \r and \n anywhere in the input; a cursor is
	// one exact string, not every spelling that decodes to it.
	if len(s) > maxCursorLen || strings.ContainsAny(s, "\r\n") {
		return 0, Key{}, false
	}
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) < 10+macLen || len(b) > 10+maxIDLen+macLen {
		return 0, Key{}, false
	}
	payload, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	m := c.macs.Get().(*macState)
	defer c.macs.Put(m)
	m.buf = m.appendMAC(append(m.buf[:0], payload...), list, binding)
	if !hmac.Equal(sum, m.buf[len(payload):]) {
		return 0, Key{}, false
	}
	if payload[0] != version || payload[1]&^(flagPrevious|flagTime) != 0 {
		return 0, Key{}, false
	}
	var k Key
	if payload[1]&flagTime != 0 {
		k.Time = time.UnixMicro(int64(binary.BigEndian.Uint64(payload[2:10]))).UTC()
	}
	k.ID = string(payload[10:])
	d := Next
	if payload[1]&flagPrevious != 0 {
		d = Previous
	}
	return d, k, true
}

// CheckKey is a service's start-up check of its cursor key setting, named
// name in the errors: a key shorter than MinKeyLen is refused, and so is
// none in production, where each instance would sign with a random key of
// its own and a cursor would fail on any other instance or after a
// restart.
func CheckKey(name string, key secret.String, production bool) error {
	switch {
	case !key.IsZero() && len(key.Reveal()) < MinKeyLen:
		return fmt.Errorf("%s must be at least %d bytes", name, MinKeyLen)
	case key.IsZero() && production:
		return fmt.Errorf("%s (or %s_FILE) is required in production", name, name)
	}
	return nil
}

// OpenCodec returns service's codec keyed with key, or, when key is not
// set, one with a random key; random says which, so that the service can
// warn that its cursors die with the process.
func OpenCodec(service string, key secret.String) (c *Codec, random bool, err error) {
	if key.IsZero() {
		return RandomCodec(service), true, nil
	}
	c, err = NewCodec(service, []byte(key.Reveal()))
	return c, false, err
}
