package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/pagination"
)

// A list page is pinned to the byte, cursors included: three buyers with
// fixed ids and times, walked two at a time forward and back, and
// filtered, under a fixed cursor key. Whatever writes the page (the
// envelope, the items, the timestamps, the cursors' format and MAC), a
// client reads the same bytes.
func TestBuyerPageBytes(t *testing.T) {
	ctx := context.Background()
	db := postgrestest.New(t)
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO buyers (id, merchant_account_id, display_name, external_identifier, created_at, updated_at) VALUES
		('0192f3a4-5b6c-7d8e-9f00-000000000001', 'default', 'Ann <Buyer> & Co', 'ext-1', '2026-11-22 07:30:00.123456Z', '2026-11-22 08:30:00Z'),
		('0192f3a4-5b6c-7d8e-9f00-000000000002', 'default', NULL, 'ext "2"', '2026-11-22 07:30:01Z', '2026-11-22 07:30:01Z'),
		('0192f3a4-5b6c-7d8e-9f00-000000000003', 'default', 'Bo ✓ 😀', NULL, '1999-12-31 23:59:59.999999Z', '2030-01-01 00:00:00.000001Z')`); err != nil {
		t.Fatal(err)
	}
	authz, token := testAuth(t, "buyers.read")
	codec, err := pagination.NewCodec("core-api", []byte("a cursor key of thirty-two bytes"))
	if err != nil {
		t.Fatal(err)
	}
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	httpapi.Routes(rt, httpapi.Deps{Log: slog.New(slog.DiscardHandler), Auth: authz, Cursors: codec, Buyers: &buyers.Service{Store: db}})

	const (
		buyer1 = `{"type":"buyer","id":"0192f3a4-5b6c-7d8e-9f00-000000000001","display_name":"Ann \u003cBuyer\u003e \u0026 Co","external_identifier":"ext-1","created_at":"2026-11-22T07:30:00.123456Z","updated_at":"2026-11-22T08:30:00.000000Z"}`
		buyer2 = `{"type":"buyer","id":"0192f3a4-5b6c-7d8e-9f00-000000000002","display_name":null,"external_identifier":"ext \"2\"","created_at":"2026-11-22T07:30:01.000000Z","updated_at":"2026-11-22T07:30:01.000000Z"}`
		buyer3 = `{"type":"buyer","id":"0192f3a4-5b6c-7d8e-9f00-000000000003","display_name":"Bo ✓ 😀","external_identifier":null,"created_at":"1999-12-31T23:59:59.999999Z","updated_at":"2030-01-01T00:00:00.000001Z"}`
		next   = "AQIABmDYceJQQDAxOTJmM2E0LTViNmMtN2Q4ZS05ZjAwLTAwMDAwMDAwMDAwMT8v4y4sIf_RQmH-ylU6lto"
		prev   = "AQMAA10BOzff_zAxOTJmM2E0LTViNmMtN2Q4ZS05ZjAwLTAwMDAwMDAwMDAwM45vH7Gn7Jmy0HGih9wHxOE"
		search = "AQIABmDYceJQQDAxOTJmM2E0LTViNmMtN2Q4ZS05ZjAwLTAwMDAwMDAwMDAwMZ6Htm3MnlADdUlZkYmwvMQ"
	)
	for _, tc := range []struct{ name, query, want string }{
		{"first page", "limit=2",
			`{"items":[` + buyer2 + `,` + buyer1 + `],"limit":2,"next_cursor":"` + next + `","previous_cursor":null}`},
		{"next page", "limit=2&cursor=" + next,
			`{"items":[` + buyer3 + `],"limit":2,"next_cursor":null,"previous_cursor":"` + prev + `"}`},
		{"back to the first", "limit=2&cursor=" + prev, // the same next cursor as the first time
			`{"items":[` + buyer2 + `,` + buyer1 + `],"limit":2,"next_cursor":"` + next + `","previous_cursor":null}`},
		{"filtered", "limit=1&search=" + url.QueryEscape("b"),
			`{"items":[` + buyer1 + `],"limit":1,"next_cursor":"` + search + `","previous_cursor":null}`},
		{"empty", "external_identifier=none", `{"items":[],"limit":20,"next_cursor":null,"previous_cursor":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/buyers?"+tc.query, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			if got := rec.Body.String(); rec.Code != http.StatusOK || got != tc.want {
				t.Fatalf("= %d\n%s\nwant\n%s", rec.Code, got, tc.want)
			}
			if h := rec.Header(); h.Get("Content-Type") != "application/json" || h.Get("Content-Length") != strconv.Itoa(len(tc.want)) {
				t.Fatalf("headers %v", h)
			}
		})
	}
}
