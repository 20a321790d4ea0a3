package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/payorch/vault-proxy/vaulting/vaultingtest"
	"github.com/valyala/fasthttp"
)

// reconcileRig is the reconciliation's routes on a real vault (database,
// Vault transit, audit spool) with the sandbox token service, and a
// minimum age of an hour.
type reconcileRig struct {
	t     *testing.T
	p     *vaultingtest.Parts
	nt    *networktoken.Service
	rt    *httpapi.Router
	cards int // vaulted so far, for distinct card numbers
}

func newReconcileRig(t *testing.T) *reconcileRig {
	t.Helper()
	p := vaultingtest.New(t, nil)
	reg := &networktoken.Registry{}
	reg.Register(&networktoken.Sandbox{}, networktoken.SandboxSchemes...)
	nt := &networktoken.Service{Store: p.DB, Audits: p.Audits, Sealer: p.Sealer, Providers: reg, Vaulting: p.Service}
	cards := &httpapi.Cards{Vaulting: p.Service, NetworkTokens: nt, Log: slog.New(slog.DiscardHandler)}
	h := &httpapi.Reconciliation{Store: p.DB, Cards: cards, MinAge: time.Hour}
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	rt.Handle(fasthttp.MethodGet, zone.ReconcileRecordsPath, h.List)
	rt.Handle(fasthttp.MethodDelete, zone.ReconcileRecordPath, h.Shred)
	return &reconcileRig{t: t, p: p, nt: nt, rt: rt}
}

// vault stores a card for merchant, vaulted age ago by the database's clock.
func (r *reconcileRig) vault(merchant string, age time.Duration) uuid.UUID {
	r.t.Helper()
	pans := []string{"4111111111111111", "4012888888881881", "5555555555554444", "5105105105105100", "4242424242424242"}
	pan := pans[r.cards%len(pans)]
	r.cards++
	rec, err := r.p.Service.VaultCard(context.Background(), vaulting.Caller{MerchantAccountID: merchant, Actor: "test"},
		vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte(pan), ExpirationDate: "12/39"})
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.p.DB.Pool.Exec(context.Background(), `UPDATE vaulted_cards SET created_at = created_at - $2::interval WHERE id = $1`, rec.Token, age); err != nil {
		r.t.Fatal(err)
	}
	return rec.Token
}

func (r *reconcileRig) list(query url.Values) (int, []byte) {
	return serveInternal(r.rt, fasthttp.MethodGet, zone.ReconcileRecordsPath+"?"+query.Encode(), "")
}

func (r *reconcileRig) shred(merchant string, token uuid.UUID) (int, []byte) {
	return serveInternal(r.rt, fasthttp.MethodDelete, zone.ReconcileRecordPathPrefix+token.String(), "", accountid.Header, merchant)
}

func (r *reconcileRig) rows(token uuid.UUID) int {
	r.t.Helper()
	var n int
	if err := r.p.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM vaulted_cards WHERE id = $1`, token).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// Every bad parameter of the list is a detail of one 400, at the
// parameter, before the database is asked.
func TestReconcileListRefusesBadQueries(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	rt.Handle(fasthttp.MethodGet, zone.ReconcileRecordsPath, (&httpapi.Reconciliation{MinAge: time.Hour}).List)
	const now = "2026-11-27T10:00:00Z"
	for _, tc := range []struct {
		name, query string
		pointers    []string
	}{
		{"no cutoff", "", []string{"created_before"}},
		{"a cutoff that is not a timestamp", "created_before=yesterday", []string{"created_before"}},
		{"two cutoffs", "created_before=" + now + "&created_before=" + now, []string{"created_before"}},
		{"after that is not a UUID", "created_before=" + now + "&after=x", []string{"after"}},
		{"after in upper case", "created_before=" + now + "&after=0B7D7C3E-3F5E-4C56-9A52-7E6F5A6F2B11", []string{"after"}},
		{"limit zero", "created_before=" + now + "&limit=0", []string{"limit"}},
		{"limit above the maximum", "created_before=" + now + "&limit=1001", []string{"limit"}},
		{"a merchant account id that cannot be one", "created_before=" + now + "&merchant_account_id=Acme%20Corp", []string{"merchant_account_id"}},
		{"all at once", "after=1&limit=x&merchant_account_id=", []string{"created_before", "after", "limit", "merchant_account_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := serveInternal(rt, fasthttp.MethodGet, zone.ReconcileRecordsPath+"?"+tc.query, "")
			e, err := apierror.Parse(body)
			if status != fasthttp.StatusBadRequest || err != nil || e.Code != apierror.CodeBadRequest {
				t.Fatalf("= %d %s, want 400", status, body)
			}
			var got []string
			for _, d := range e.Details {
				if d.Location != apierror.LocationQuery {
					t.Fatalf("detail %+v is not at the query", d)
				}
				got = append(got, d.Pointer)
			}
			if !slices.Equal(got, tc.pointers) {
				t.Fatalf("details at %v, want %v", got, tc.pointers)
			}
		})
	}
}

// The list pages through the records old enough (by vault-proxy's
// minimum age, whatever cutoff is asked), in token order, each once, and
// says nothing of a record but its id, account, kind and age.
func TestReconcileListsOldRecordsInPages(t *testing.T) {
	r := newReconcileRig(t)
	var old []uuid.UUID
	for _, m := range []string{"m1", "m2", "m1"} {
		old = append(old, r.vault(m, 2*time.Hour))
	}
	fresh := r.vault("m1", 10*time.Minute) // younger than the minimum age
	slices.SortFunc(old, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })

	q := url.Values{"created_before": {time.Now().Add(time.Minute).Format(time.RFC3339)}, "limit": {"2"}}
	var got []uuid.UUID
	for pages := 1; ; pages++ {
		status, body := r.list(q)
		if status != fasthttp.StatusOK {
			t.Fatalf("page %d: %d %s", pages, status, body)
		}
		var page zone.VaultedRecordPage
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&page); err != nil || page.Type != "vaulted-record-page" {
			t.Fatalf("page %d: %s (%v)", pages, body, err)
		}
		for _, it := range page.Items {
			created, err := time.Parse(time.RFC3339Nano, it.CreatedAt)
			if it.Type != "vaulted-record" || it.Kind != "card" || it.MerchantAccountID == "" || err != nil || time.Since(created) < time.Hour {
				t.Fatalf("item %+v", it)
			}
			got = append(got, uuid.MustParse(it.ID))
		}
		if page.NextAfter == nil {
			if pages != 2 {
				t.Fatalf("%d pages, want 2", pages)
			}
			break
		}
		q.Set("after", *page.NextAfter)
	}
	if !slices.Equal(got, old) || slices.Contains(got, fresh) {
		t.Fatalf("listed %v, want %v (not %s)", got, old, fresh)
	}

	// One account's only.
	q = url.Values{"created_before": {time.Now().Format(time.RFC3339)}, "merchant_account_id": {"m2"}}
	if status, body := r.list(q); status != fasthttp.StatusOK || bytes.Count(body, []byte(`"vaulted-record"`)) != 1 || !bytes.Contains(body, []byte(`"next_after":null`)) {
		t.Fatalf("m2's: %d %s", status, body)
	}
}

// The shred refuses a record younger than the minimum age (422, and it
// keeps its network tokens), shreds an older one, network tokens and all
// (204), and is 404 for a record that is gone or another account's.
func TestReconcileShredChecksTheAge(t *testing.T) {
	r := newReconcileRig(t)
	ctx := context.Background()
	fresh, old := r.vault("m1", 50*time.Minute), r.vault("m1", 2*time.Hour)
	for _, token := range []uuid.UUID{fresh, old} {
		if _, _, err := r.nt.Provision(ctx, vaulting.Caller{MerchantAccountID: "m1", Actor: "test"}, token); err != nil {
			t.Fatal(err)
		}
	}
	liveTokens := func(token uuid.UUID) int {
		var n int
		if err := r.p.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM network_tokens WHERE payment_method_id = $1 AND status <> 'deleted'`, token).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name     string
		merchant string
		token    uuid.UUID
		status   int
		code     string
		rows     int // the card's, after
	}{
		{"younger than the minimum age", "m1", fresh, fasthttp.StatusUnprocessableEntity, apierror.CodeUnprocessableEntity, 1},
		{"another account's", "m2", old, fasthttp.StatusNotFound, apierror.CodeNotFound, 1},
		{"old enough, with a live network token", "m1", old, fasthttp.StatusNoContent, "", 0},
		{"gone", "m1", old, fasthttp.StatusNotFound, apierror.CodeNotFound, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := r.shred(tc.merchant, tc.token)
			if status != tc.status {
				t.Fatalf("= %d %s, want %d", status, body, tc.status)
			}
			if tc.code != "" {
				if e, err := apierror.Parse(body); err != nil || e.Code != tc.code {
					t.Fatalf("= %s (%v), want %s", body, err, tc.code)
				}
			}
			if n := r.rows(tc.token); n != tc.rows {
				t.Fatalf("%d rows of the card, want %d", n, tc.rows)
			}
		})
	}
	if liveTokens(fresh) != 1 {
		t.Fatal("a refused shred deleted the card's network token")
	}
}
