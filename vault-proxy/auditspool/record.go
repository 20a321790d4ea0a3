package auditspool

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payorch/shared/jsonenc"
	"github.com/payorch/shared/uuidtext"
	vaultproxy "github.com/payorch/vault-proxy"
)

// A record is an event as the spool stores it and the sink receives it: a
// JSON object with these members (a file format: add members, never rename
// them):
//
//	at                   time spooled, RFC 3339 with nanoseconds, UTC
//	actor                string
//	merchant_account_id  string
//	action               string
//	tokens               array of UUID strings (omitted when empty)
//	purpose              string (omitted when empty)
//	outcome              string
//	request_id           string (omitted when empty)
//	detail               object of names, never values (omitted when empty)
//
// appendRecord's output is byte-identical to encoding/json marshalling
// these members (record_test.go holds that oracle, a table test and a fuzz
// target); it is hand-written because every audited request pays for it.
//
// appendRecord appends e's record to b.
func appendRecord(b []byte, e vaultproxy.AuditEvent) ([]byte, error) {
	at := e.OccurredAt.UTC()
	if y := at.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("auditspool: event time %v is outside years 0-9999", at)
	}
	b = append(b, `{"at":"`...)
	b = at.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","actor":`...)
	b = jsonenc.AppendString(b, e.Actor)
	b = append(b, `,"merchant_account_id":`...)
	b = jsonenc.AppendString(b, e.MerchantAccountID)
	b = append(b, `,"action":`...)
	b = jsonenc.AppendString(b, e.Action)
	if len(e.Tokens) > 0 {
		b = append(b, `,"tokens":[`...)
		for i, t := range e.Tokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = uuidtext.Append(b, t)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	if e.Purpose != "" {
		b = append(b, `,"purpose":`...)
		b = jsonenc.AppendString(b, e.Purpose)
	}
	b = append(b, `,"outcome":`...)
	b = jsonenc.AppendString(b, e.Outcome)
	if e.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = jsonenc.AppendString(b, e.RequestID)
	}
	if len(e.Detail) > 0 {
		b = append(b, `,"detail":`...)
		var err error
		if b, err = appendDetail(b, e.Detail); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendDetail writes the detail map as encoding/json does: keys sorted.
// The members are taken out in one pass over the map and sorted together,
// rather than the keys sorted and each value looked up again.
func appendDetail(b []byte, d map[string]any) ([]byte, error) {
	var buf [8]member // room for a forward's detail without a heap slice
	members := buf[:0]
	for k, v := range d {
		members = append(members, member{k, v})
	}
	slices.SortFunc(members, func(x, y member) int { return strings.Compare(x.key, y.key) })
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, m.key)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, m.value); err != nil {
			return b, fmt.Errorf("auditspool: detail %q: %w", m.key, err)
		}
	}
	return append(b, '}'), nil
}

// member is one of a detail's keys and its value.
type member struct {
	key   string
	value any
}

// appendValue writes the values audit details carry directly; anything
// else goes through encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		b = jsonenc.AppendString(b, v)
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for j, s := range v {
			if j > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, s)
		}
		b = append(b, ']')
	case int:
		b = strconv.AppendInt(b, int64(v), 10)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case bool:
		b = strconv.AppendBool(b, v)
	case nil:
		b = append(b, "null"...)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return b, err
		}
		b = append(b, raw...)
	}
	return b, nil
}
