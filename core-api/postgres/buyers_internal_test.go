package postgres

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/testsupport"
)

// The buyer list is an index range scan on (merchant_account_id,
// created_at, id) in both directions, never a sort of the account's rows.
func TestBuyerListUsesTheKeysetIndex(t *testing.T) {
	ctx := context.Background()
	db := analyzed(t, `INSERT INTO buyers (merchant_account_id, display_name, created_at)
		SELECT 'default', 'b' || i, now() - i * interval '1 second' FROM generate_series(1, 5000) i`, `ANALYZE buyers`)
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
			p := explain(t, db, sql, args)
			if !strings.Contains(p, "Index Scan") || !strings.Contains(p, "buyers_list_idx") || strings.Contains(p, "Sort") {
				t.Errorf("%s page %+v: plan\n%s", name, f, p)
			}
			if page.Boundary != nil && !strings.Contains(p, "AND (ROW(created_at, id) ") {
				t.Errorf("%s page: keyset is not an index condition:\n%s", name, p)
			}
		}
	}
}

// analyzed opens the core database of fresh test databases, filled and
// analyzed by statements, for a test of the planner's choices.
func analyzed(t *testing.T, statements ...string) *DB {
	t.Helper()
	ctx := context.Background()
	dbs := testsupport.NewTestDatabases(t)
	if err := Migrate(ctx, dbs.CoreOwnerDSN); err != nil {
		t.Fatal(err)
	}
	// As the owner: ANALYZE is the owner's, and the rows go in as test
	// set-up, not as the service writes them.
	for _, sql := range statements {
		dbs.ExecAsOwner(t, dbs.Core, sql)
	}
	db, err := Open(ctx, dbs.CoreDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// explain is PostgreSQL's plan of sql with args.
func explain(t *testing.T, db *DB, sql string, args []any) string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
