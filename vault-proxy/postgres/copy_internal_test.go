package postgres

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
)

// FuzzAppendCopyRows: whatever a batch holds, appendCopyRows does not
// panic, and what it accepts is a well-formed binary COPY stream of one
// tuple of len(copyColumns) fields per record it counted.
func FuzzAppendCopyRows(f *testing.F) {
	good, err := auditspool.EncodeBatch(0,
		vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a\tb", MerchantAccountID: "m", Action: "forward",
			Tokens: []uuid.UUID{uuid.New(), uuid.New()}, Purpose: "p", Outcome: "success", RequestID: "r",
			Detail: map[string]any{"host": "h", "status": 200}},
		vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.Records)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"at":"2026-11-24T01:02:03Z","tokens":[]}]`))
	f.Add([]byte(`[{"at":"2026-11-24T01:02:03.999999999+14:00","tokens":null,"detail":[1,{"a":"\u00e9"}]}]`))
	f.Add([]byte(`[{"at":"x"},{"tokens":{}}]`))
	f.Fuzz(func(t *testing.T, records []byte) {
		out, n, err := appendCopyRows(nil, records)
		if err != nil {
			return
		}
		if !strings.HasPrefix(string(out), copyBinaryHeader) {
			t.Fatalf("no header: %q", out)
		}
		b := out[len(copyBinaryHeader):]
		take := func(n int, what string) []byte {
			if n < 0 || n > len(b) {
				t.Fatalf("%s: %d bytes wanted, %d left", what, n, len(b))
			}
			v := b[:n]
			b = b[n:]
			return v
		}
		tuples := 0
		for {
			fields := int16(binary.BigEndian.Uint16(take(2, "field count")))
			if fields == -1 {
				break
			}
			if int(fields) != len(copyColumns) {
				t.Fatalf("tuple %d has %d fields", tuples, fields)
			}
			for range fields {
				if l := int32(binary.BigEndian.Uint32(take(4, "field length"))); l != -1 {
					take(int(l), "field")
				}
			}
			tuples++
		}
		if len(b) != 0 || tuples != n {
			t.Fatalf("%d tuples, %d counted, %d bytes after the trailer", tuples, n, len(b))
		}
	})
}
