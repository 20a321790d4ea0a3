package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payorch/shared/pagination"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

func event(i int, rid string, tokens ...uuid.UUID) vaultproxy.AuditEvent {
	return vaultproxy.AuditEvent{
		OccurredAt: time.Date(2026, 11, 23, 10, 0, i, 123456000, time.UTC), Actor: "a", MerchantAccountID: "m",
		Action: "forward", Tokens: tokens, Purpose: "vault-forward", Outcome: "success", RequestID: rid,
		Detail: map[string]any{"i": i, "placeholders": []string{"CARD_NUMBER_1"}},
	}
}

// openDB is a new, migrated vault database.
func openDB(t *testing.T) *postgres.DB {
	t.Helper()
	db, _ := postgrestest.Open(t)
	return db
}

// batch is what a spool ships for events after record prev.
func batch(t *testing.T, prev uint64, events ...vaultproxy.AuditEvent) auditspool.Batch {
	t.Helper()
	b, err := auditspool.EncodeBatch(prev, events...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A batch and its checkpoint commit together: a batch shipped against a
// checkpoint that has moved stores nothing, so a record is never stored
// twice, and each spool has its own checkpoint.
func TestShipAuditMovesTheCheckpointWithTheBatch(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	a, b := uuid.New(), uuid.New()
	tok := uuid.New()

	if cp, err := db.AuditCheckpoint(ctx, a); err != nil || cp != 0 {
		t.Fatalf("new spool checkpoint = %d, %v; want 0", cp, err)
	}
	if err := db.ShipAudit(ctx, a, batch(t, 0, event(1, "r1", tok), event(2, "r2"))); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		spool uuid.UUID
		prev  uint64
		rid   string
		want  error
	}{
		{"the same batch again (a retry after a lost answer)", a, 0, "r1-again", auditspool.ErrCheckpointMoved},
		{"a batch from a stale position", a, 1, "r2-again", auditspool.ErrCheckpointMoved},
		{"a batch from the checkpoint", a, 2, "r3", nil},
		{"another spool starts at 0", b, 0, "b1", nil},
	}
	for _, st := range steps {
		err := db.ShipAudit(ctx, st.spool, batch(t, st.prev, event(int(st.prev)+1, st.rid)))
		if !errors.Is(err, st.want) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want)
		}
	}
	if cp, _ := db.AuditCheckpoint(ctx, a); cp != 3 {
		t.Fatalf("checkpoint of a = %d, want 3", cp)
	}

	rows, err := db.Pool.Query(ctx, `SELECT request_id, occurred_at, tokens, detail::text FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var rid, detail string
		var at time.Time
		var tokens []uuid.UUID
		if err := rows.Scan(&rid, &at, &tokens, &detail); err != nil {
			t.Fatal(err)
		}
		got = append(got, rid)
		if rid == "r2" && len(tokens) != 0 {
			t.Fatalf("r2 (no tokens) stored with tokens %v", tokens)
		}
		if rid == "r1" && (len(tokens) != 1 || tokens[0] != tok || detail != `{"i":1,"placeholders":["CARD_NUMBER_1"]}` ||
			!at.Equal(time.Date(2026, 11, 23, 10, 0, 1, 123456000, time.UTC))) {
			t.Fatalf("r1 stored as tokens %v detail %s at %v", tokens, detail, at)
		}
	}
	if want := []string{"r1", "r2", "r3", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v (in order, each once)", got, want)
	}
}

// A page of a merchant account's events is read through an index, however
// many events other merchant accounts have: the page of a quiet merchant
// (1% of the events, all older than a busy one's 20,000) touches a handful
// of buffers, not the table. Before migration 006 the only merchant index
// could not give id order, and PostgreSQL walked the primary key backwards
// through all of the busy merchant's events (300 buffers here, growing with
// the table). Since migration 008 the primary key (merchant_account_id, id)
// is the one index that answers it.
func TestAuditEventsPageReadsOnlyTheMerchantsEvents(t *testing.T) {
	ctx := context.Background()
	db, dbs := postgrestest.Open(t)
	for _, m := range []struct {
		merchant string
		n        int
	}{{"quiet", 200}, {"busy", 20000}} {
		events := make([]vaultproxy.AuditEvent, m.n)
		for i := range events {
			events[i] = vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "a", MerchantAccountID: m.merchant, Action: "forward", Outcome: "success"}
		}
		if err := db.ShipAudit(ctx, uuid.New(), batch(t, 0, events...)); err != nil {
			t.Fatal(err)
		}
	}
	dbs.ExecAsOwner(t, dbs.Vault, `ANALYZE audit_events`)
	const maxBuffers = 12 // an index descent and a heap page or two; the table is ~500 pages
	cases := []struct {
		merchant string
		before   int64
		want     []int64 // ids of the page
	}{
		{"quiet", 0, []int64{200, 199, 198}},
		{"quiet", 4, []int64{3, 2, 1}},
		{"busy", 0, []int64{20200, 20199, 20198}},
		{"busy", 10000, []int64{9999, 9998, 9997}},
		{"nobody", 0, nil},
	}
	for _, c := range cases {
		var plan []struct {
			Plan struct {
				SharedHit  int `json:"Shared Hit Blocks"`
				SharedRead int `json:"Shared Read Blocks"`
			}
		}
		var raw []byte
		page := pagination.Page{Limit: 2} // and one more row, which says there is more
		if c.before != 0 {
			page.Boundary = &pagination.Key{ID: strconv.FormatInt(c.before, 10)}
		}
		sql, args := postgres.AuditEventsPage(c.merchant, page)
		if err := db.Pool.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("plan %s: %v", raw, err)
		}
		if n := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead; n > maxBuffers {
			t.Errorf("%s before %d: the page touched %d buffers, want at most %d; plan %s", c.merchant, c.before, n, maxBuffers, raw)
		}
		events, err := db.AuditEvents(ctx, c.merchant, page)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range events {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s before %d: ids %v, want %v", c.merchant, c.before, got, c.want)
		}
	}
}

// Every value comes back exactly as spooled, whatever it holds: the
// characters COPY's text format would escape (backslash, tab, newline,
// carriage return), JSON escapes, quotes, non-ASCII, no tokens and a
// hundred, members the record omits when empty; the time to the
// microsecond.
func TestShipAuditStoresValuesExactly(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	many := make([]uuid.UUID, 100)
	for i := range many {
		many[i] = uuid.New()
	}
	nasty := "a\\b\tc\nd\re \"q\" \\N \\. é \u2028 <&> \x01"
	events := []vaultproxy.AuditEvent{
		{OccurredAt: time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC), Actor: nasty, MerchantAccountID: "m\tn",
			Action: "forward", Tokens: many, Purpose: nasty, Outcome: "failure: a\\b", RequestID: "r\n1",
			Detail: map[string]any{"host": nasty, "placeholders": []string{"CARD_NUMBER_1", `x\y`}, "status": 502, "nested": map[string]any{"k": "\\t"}}},
		{OccurredAt: time.Date(2026, 11, 24, 1, 2, 4, 1700, time.UTC), Actor: "a", MerchantAccountID: "m", Action: "vault", Outcome: "success"},
	}
	if err := db.ShipAudit(ctx, uuid.New(), batch(t, 0, events...)); err != nil {
		t.Fatal(err)
	}
	got, err := db.AuditEvents(ctx, "m\tn", pagination.Page{Limit: 10})
	if err != nil || len(got) != 1 {
		t.Fatalf("%d events, %v", len(got), err)
	}
	g, w := got[0], events[0]
	wantDetail, _ := json.Marshal(w.Detail)
	gotDetail, _ := json.Marshal(g.Detail)
	if !g.OccurredAt.Equal(w.OccurredAt) || g.Actor != w.Actor || g.Action != w.Action || !slices.Equal(g.Tokens, w.Tokens) ||
		g.Purpose != w.Purpose || g.Outcome != w.Outcome || g.RequestID != w.RequestID || string(gotDetail) != string(wantDetail) {
		t.Fatalf("stored %+v\nwant   %+v\ndetail %s, want %s", g, w, gotDetail, wantDetail)
	}
	// Times far from 2000, both ways, at the ends of what a spool records.
	for _, at := range []time.Time{
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(1600, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(2400, 2, 29, 12, 0, 0, 0, time.UTC),
	} {
		e := vaultproxy.AuditEvent{OccurredAt: at, Actor: "a", MerchantAccountID: "far", Action: "vault", Outcome: "success"}
		if err := db.ShipAudit(ctx, uuid.New(), batch(t, 0, e)); err != nil {
			t.Fatal(err)
		}
		far, err := db.AuditEvents(ctx, "far", pagination.Page{Limit: 1})
		if err != nil || len(far) == 0 || !far[0].OccurredAt.Equal(at) {
			t.Fatalf("spooled at %v, stored %+v, %v", at, far, err)
		}
	}
	got, err = db.AuditEvents(ctx, "m", pagination.Page{Limit: 10})
	if err != nil || len(got) != 1 || got[0].Purpose != "" || got[0].RequestID != "" || len(got[0].Tokens) != 0 || len(got[0].Detail) != 0 ||
		!got[0].OccurredAt.Equal(time.Date(2026, 11, 24, 1, 2, 4, 2000, time.UTC)) { // rounded to the microsecond
		t.Fatalf("the event without optional members: %+v, %v", got, err)
	}
	if c := verifyChain(t, db); c.Records != 6 {
		t.Fatalf("the chain holds %d records, want 6", c.Records)
	}
}

// Text PostgreSQL cannot hold (U+0000, invalid UTF-8) in a record's
// fields, which callers choose (a token's jti is the actor, the request
// id), is stored with U+FFFD in its place: the batch ships, rather than
// failing and holding back every later record of every merchant.
func TestShipAuditStoresTextPostgreSQLCannotHold(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	e := vaultproxy.AuditEvent{OccurredAt: time.Now(), Actor: "token:a\x00b", MerchantAccountID: "nul", Action: "forward",
		Purpose: "p\xffq", Outcome: "success", RequestID: "r\x00"}
	if err := db.ShipAudit(ctx, uuid.New(), batch(t, 0, e)); err != nil {
		t.Fatalf("a record with U+0000 did not ship: %v", err)
	}
	got, err := db.AuditEvents(ctx, "nul", pagination.Page{Limit: 1})
	if err != nil || len(got) != 1 || got[0].Actor != "token:a\uFFFDb" || got[0].Purpose != "p\uFFFDq" || got[0].RequestID != "r\uFFFD" {
		t.Fatalf("stored %+v, %v", got, err)
	}
	verifyChain(t, db) // the record is hashed as stored, with U+FFFD
}

// A batch that is not what a spool writes is refused whole, and the
// checkpoint stays where it was.
func TestShipAuditRefusesAMalformedBatch(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	spool := uuid.New()
	good := batch(t, 0, event(1, "r1"))
	for _, tc := range []struct {
		name    string
		records string
		last    uint64
	}{
		{"not an array", `{"actor":"a"}`, 1},
		{"not objects", `[1,2]`, 2},
		{"fewer records than the batch says", string(good.Records), 2},
		{"a required member missing", `[{"at":"2026-11-24T01:02:03Z","actor":"a","merchant_account_id":"m","action":"forward"}]`, 1},
		{"a token that is not a UUID", `[{"at":"2026-11-24T01:02:03Z","actor":"a","merchant_account_id":"m","action":"forward","outcome":"success","tokens":["x"]}]`, 1},
		{"a token that is not a string", `[{"at":"2026-11-24T01:02:03Z","actor":"a","merchant_account_id":"m","action":"forward","outcome":"success","tokens":[7]}]`, 1},
		{"tokens that are not an array", `[{"at":"2026-11-24T01:02:03Z","actor":"a","merchant_account_id":"m","action":"forward","outcome":"success","tokens":"x"}]`, 1},
		{"a time that is not RFC 3339", `[{"at":"24/11/2026","actor":"a","merchant_account_id":"m","action":"forward","outcome":"success"}]`, 1},
		{"a time that is not a string", `[{"at":1764000000,"actor":"a","merchant_account_id":"m","action":"forward","outcome":"success"}]`, 1},
		{"a text member that is not a string", `[{"at":"2026-11-24T01:02:03Z","actor":7,"merchant_account_id":"m","action":"forward","outcome":"success"}]`, 1},
		{"detail that is not JSON", `[{"at":"2026-11-24T01:02:03Z","actor":"a","merchant_account_id":"m","action":"forward","outcome":"success","detail":{"a":}}]`, 1},
	} {
		err := db.ShipAudit(ctx, spool, auditspool.Batch{Prev: 0, Last: tc.last, Records: []byte(tc.records)})
		if err == nil || errors.Is(err, auditspool.ErrCheckpointMoved) {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d events stored, %v", n, err)
	}
	if cp, err := db.AuditCheckpoint(ctx, spool); err != nil || cp != 0 {
		t.Fatalf("checkpoint %d, %v", cp, err)
	}
	if err := db.ShipAudit(ctx, spool, good); err != nil {
		t.Fatalf("the good batch after the refused ones: %v", err)
	}
}

// Two shippers of one spool racing with the same batch (a copy of the
// spool shipping elsewhere): the checkpoint row's lock orders them, one
// stores the batch and the other is told the checkpoint moved.
func TestShipAuditRacingShippersStoreOnce(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	const rounds = 20
	for r := range rounds {
		spool := uuid.New()
		b := batch(t, 0, event(1, fmt.Sprintf("race-%d-a", r)), event(2, fmt.Sprintf("race-%d-b", r)))
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- db.ShipAudit(ctx, spool, b) }()
		}
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) || !errors.Is(errors.Join(e1, e2), auditspool.ErrCheckpointMoved) {
			t.Fatalf("round %d: %v and %v, want one success and one ErrCheckpointMoved", r, e1, e2)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE request_id LIKE 'race-%'`).Scan(&n); err != nil || n != 2*rounds {
		t.Fatalf("%d rows stored, want %d: %v", n, 2*rounds, err)
	}
}

// The primary key is (merchant_account_id, id) (migration 008); id stays
// unique on its own because no INSERT can choose it.
func TestAuditEventIDsCannotBeChosen(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO audit_events (id, merchant_account_id, actor, action, outcome) VALUES (1, 'm', 'a', 'forward', 'success')`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "428C9" { // generated_always
		t.Fatalf("an INSERT choosing the id: %v", err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'audit_events'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit_events has %d indexes, want the primary key alone: %v", n, err)
	}
}
