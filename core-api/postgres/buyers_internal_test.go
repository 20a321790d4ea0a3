package postgres

import (
	"context"
	"net/url"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/testsupport"
)

// The buyer list is an index range scan on (merchant_account_id,
// created_at, id) in both directions, never a sort of the account's rows.
func TestBuyerListUsesTheKeysetIndex(t *testing.T) {
	ctx := context.Background()
	dbs := testsupport.NewTestDatabases(t)
	if err := Migrate(ctx, dbs.CoreOwnerDSN); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, dbs.CoreDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO buyers (merchant_account_id, display_name, created_at)
		SELECT 'default', 'b' || i, now() - i * interval '1 second' FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	dbs.ExecAsOwner(t, dbs.Core, `ANALYZE buyers`)
	codec := pagination.RandomCodec("core-api")
	first, _ := codec.ParseRequest(url.Values{}, "buyers", "")
	rows, err := db.ListBuyers(ctx, "default", coreapi.BuyerFilter{}, first)
	if err != nil || len(rows) != first.FetchLimit() {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	env := pagination.Build(first, rows, func(b coreapi.Buyer) pagination.Key { return pagination.Key{Time: b.CreatedAt, ID: b.ID} })
	next, err := codec.ParseRequest(url.Values{"cursor": {*env.NextCursor}}, "buyers", "")
	if err != nil {
		t.Fatal(err)
	}
	rows, err = db.ListBuyers(ctx, "default", coreapi.BuyerFilter{}, next)
	if err != nil {
		t.Fatal(err)
	}
	env = pagination.Build(next, rows, func(b coreapi.Buyer) pagination.Key { return pagination.Key{Time: b.CreatedAt, ID: b.ID} })
	prev, err := codec.ParseRequest(url.Values{"cursor": {*env.PreviousCursor}}, "buyers", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]pagination.Page{"first": first, "next": next, "previous": prev} {
		for _, f := range []coreapi.BuyerFilter{{}, {Search: "b1"}} {
			sql, args := buyerListQuery("default", f, page)
			var plan strings.Builder
			r, err := db.Pool.Query(ctx, "EXPLAIN "+sql, args...)
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				var line string
				if err := r.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan.WriteString(line + "\n")
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			p := plan.String()
			if !strings.Contains(p, "Index Scan") || !strings.Contains(p, "buyers_list_idx") || strings.Contains(p, "Sort") {
				t.Errorf("%s page %+v: plan\n%s", name, f, p)
			}
			if page.Boundary != nil && !strings.Contains(p, "AND (ROW(created_at, id) ") {
				t.Errorf("%s page: keyset is not an index condition:\n%s", name, p)
			}
		}
	}
}
