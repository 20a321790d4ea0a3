package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/reconcile"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/zone"
	"github.com/payorch/tokenizer/bank"
	vaultproxy "github.com/payorch/vault-proxy"
	vpapp "github.com/payorch/vault-proxy/app"
	"github.com/payorch/vault-proxy/vaulting"
)

// reconcileGrace is the grace period the reconciliation tests give both
// sides (production: 24 h).
const reconcileGrace = time.Second

// A card vaulted while core-api is frozen (SIGSTOP) and then killed
// (SIGKILL) before it answers: vault-proxy cannot tell whether core-api
// stored the payment method and keeps the vaulted card (502 naming the
// token). Nothing in core-api refers to it. After a restart, `core-api
// reconcile-vault` finds it, confirms over the internal link that no
// payment method holds it, and has vault-proxy crypto-shred it, audited;
// a card whose payment method was stored is left as it was.
func TestReconcileShredsTheCardOfACreationCoreAPIDiedIn(t *testing.T) {
	s := stack.Start(t, withReconcileGrace(reconcileGrace))
	core := s.StartCoreProcess(t, "CORE_API_VAULT_RECONCILE_INTERVAL=0s")
	tok := s.Token(t, pmScopes...)
	const controlPAN, orphanPAN = "5555555555554444", "4111111111111111"
	control := vaultCard(t, s, tok, controlPAN, "")["id"].(string)

	core.Signal(t, syscall.SIGSTOP)
	answered := make(chan createAnswer, 1)
	go func() { answered <- postCard(s, tok, orphanPAN) }()
	for deadline := time.Now().Add(30 * time.Second); countRows(t, s.DBs.VaultDSN, "vaulted_cards") < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the card was not vaulted while core-api was stopped")
		}
	}
	core.Kill(t)
	a := <-answered
	if a.err != nil || a.status != http.StatusBadGateway {
		t.Fatalf("creation while core-api died: %d %s (%v), want 502", a.status, a.body, a.err)
	}
	orphan := regexp.MustCompile(`payment method ([0-9a-f-]{36}) may have been stored`).FindStringSubmatch(apiError(t, a.body).Message)
	if orphan == nil {
		t.Fatalf("the 502 does not name the kept card: %s", a.body)
	}
	id := orphan[1]

	s.StartCoreProcess(t, "CORE_API_VAULT_RECONCILE_INTERVAL=0s")
	if code, raw := newCore(s, tok, "").do(t, http.MethodGet, "/payment-methods/"+id, nil); code != http.StatusNotFound {
		t.Fatalf("core-api has a payment method for the kept card: %d %s", code, raw)
	}
	if n := vaultCount(t, s, `SELECT count(*) FROM vaulted_cards WHERE id = $1`, id); n != 1 {
		t.Fatalf("the kept card: %d rows, want 1 (an orphan)", n)
	}

	time.Sleep(reconcileGrace) // both cards are now past the grace period
	out, errOut, err := s.RunCore(t, []string{"reconcile-vault"}, "CORE_API_VAULT_RECONCILE_GRACE="+reconcileGrace.String())
	if err != nil {
		t.Fatalf("core-api reconcile-vault: %v\n%s%s", err, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^shredded 1\b`).MatchString(out) {
		t.Fatalf("core-api reconcile-vault said:\n%s", out)
	}

	if n := vaultCount(t, s, `SELECT count(*) FROM vaulted_cards WHERE id = $1`, id); n != 0 {
		t.Fatal("the orphaned card is still in the vault")
	}
	if _, err := reveal(t, s, id); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("revealing the shredded card: %v, want not found", err)
	}
	if code, _ := internalCard(t, s, "default", id); code != http.StatusNotFound {
		t.Fatalf("the shredded card's metadata: %d, want 404", code)
	}
	s.FlushAudit(t)
	run := regexp.MustCompile(`(?m)^run (\S+):`).FindStringSubmatch(out)
	if run == nil {
		t.Fatalf("core-api reconcile-vault did not name its run:\n%s", out)
	}
	if n := auditCount(t, s, `action = 'reconcile.shred' AND outcome = 'success' AND purpose = 'no-payment-method'
		AND actor = 'core-api:reconcile' AND request_id = $2 AND tokens = ARRAY[$1::uuid]`, id, run[1]); n != 1 {
		t.Fatalf("%d audit records of the shred by run %s, want 1", n, run[1])
	}

	// The control card's payment method exists: nothing of it changed.
	if pan, err := reveal(t, s, control); err != nil || pan != controlPAN {
		t.Fatalf("the control card after reconciliation: %v", err)
	}
	if code, raw := newCore(s, tok, "").do(t, http.MethodGet, "/payment-methods/"+control, nil); code != http.StatusOK {
		t.Fatalf("the control card's payment method: %d %s", code, raw)
	}
	if n := auditCount(t, s, `action = 'reconcile.shred' AND $1 = ANY(tokens::text[])`, control); n != 0 {
		t.Fatalf("%d reconciliation records of the control card, want none", n)
	}
	assertNoCardDataLogged(t, s, controlPAN, orphanPAN)
	if bytes.Contains([]byte(out+errOut), []byte(orphanPAN)) {
		t.Fatal("the command printed a card number")
	}
}

// withReconcileGrace shortens vault-proxy's own minimum age for a
// reconciliation's shred.
func withReconcileGrace(d time.Duration) stack.Option {
	return func(v *vpapp.Config, _ *coreapp.Config) { v.ReconcileMinAge = d }
}

type createAnswer struct {
	status int
	body   []byte
	err    error
}

// postCard creates a card payment method through vault-proxy, from any
// goroutine (it does not fail the test).
func postCard(s *stack.Stack, tok, pan string) createAnswer {
	body, _ := json.Marshal(map[string]any{"method": "card", "number": pan, "expiration_date": expiryIn(2)})
	req, _ := http.NewRequest(http.MethodPost, s.PublicURL+"/payment-methods", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 3 * time.Minute, Transport: s.PublicClient.Transport}).Do(req)
	if err != nil {
		return createAnswer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return createAnswer{status: resp.StatusCode, body: raw, err: err}
}

// reveal opens a card of the default merchant account as a detokenized
// call would, and returns its number.
func reveal(t *testing.T, s *stack.Stack, id string) (string, error) {
	t.Helper()
	token, err := uuid.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	c := vaulting.Caller{MerchantAccountID: "default", Actor: "e2e", RequestID: "reconcile-test"}
	cards, o, err := s.VaultProxy.Cards.Reveal(context.Background(), c, "detokenize", "test", []uuid.UUID{token}, false)
	o.Record(context.Background(), "success", nil)
	if err != nil {
		return "", err
	}
	defer cards[0].Zero()
	return string(cards[0].Number), nil
}

// orphan vaults a record straight into the vault, as the first half of a
// creation that never reached core-api: no payment method holds it.
func orphan(t *testing.T, s *stack.Stack, merchant string, kind vaultproxy.Kind) string {
	t.Helper()
	ctx := context.Background()
	c := vaulting.Caller{MerchantAccountID: merchant, Actor: "e2e", RequestID: "reconcile-test"}
	var rec *vaultproxy.VaultedCard
	var err error
	switch kind {
	case vaultproxy.KindBankAccount:
		rec, _, err = s.VaultProxy.Cards.VaultBank(ctx, c, bank.Input{Scheme: "ach", AccountNumber: []byte("000123456789"),
			RoutingNumber: "011000015", AccountType: "checking", AccountHolderName: "Jane Doe"}, uuid.Nil)
	case vaultproxy.KindGiftCard:
		rec, err = s.VaultProxy.Cards.VaultCard(ctx, c, vaulting.CardRequest{Kind: kind, Number: []byte("6006491234567890"), SecurityCode: []byte("1234")})
	default:
		rec, err = s.VaultProxy.Cards.VaultCard(ctx, c, vaulting.CardRequest{Kind: kind, Number: []byte("4111111111111111"), ExpirationDate: expiryIn(2)})
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec.Token.String()
}

// vaulted counts the vault's records among ids.
func vaulted(t *testing.T, s *stack.Stack, ids ...string) int {
	t.Helper()
	return vaultCount(t, s, `SELECT count(*) FROM vaulted_cards WHERE id::text = ANY($1)`, ids)
}

// The reconciliation against the real vault-proxy, in pages of two: it
// finds the records of every kind that no payment method holds and that
// are past the grace period, stops before shredding any when there are
// more than it may shred, lists them in a dry run, shreds them (audited)
// once allowed, and leaves alone the records of payment methods, one
// vaulted within the grace period, another merchant account's when asked
// for one, and a token a payment method was created with meanwhile. One
// run at a time.
func TestReconcileFindsAndShredsOnlyUnclaimedRecords(t *testing.T) {
	const grace = 10 * time.Minute
	s := stack.Start(t, withReconcileGrace(grace))
	tok := s.Token(t, pmScopes...)
	var held []string
	for _, pan := range []string{"4111111111111111", "5555555555554444", "378282246310005"} {
		held = append(held, vaultCard(t, s, tok, pan, "")["id"].(string))
	}
	orphans := []string{
		orphan(t, s, "default", vaultproxy.KindCard), orphan(t, s, "default", vaultproxy.KindGiftCard),
		orphan(t, s, "default", vaultproxy.KindBankAccount), orphan(t, s, "default", vaultproxy.KindCard),
	}
	adopted := orphan(t, s, "default", vaultproxy.KindCard) // a payment method is created with it below
	elsewhere := orphan(t, s, "acme", vaultproxy.KindCard)
	// All of those were vaulted an hour ago, by the vault database's clock.
	vaultCount(t, s, `WITH aged AS (UPDATE vaulted_cards SET created_at = created_at - interval '1 hour' RETURNING 1) SELECT count(*) FROM aged`)
	fresh := orphan(t, s, "default", vaultproxy.KindCard)

	ctx := context.Background()
	job := &reconcile.Job{Store: s.CoreAPI.DB, VaultProxy: s.CoreAPI.VaultProxy, Log: slog.New(slog.DiscardHandler),
		Grace: grace, PageSize: 2, MaxShreds: 4}
	def := reconcile.Options{MerchantAccountID: "default"}

	res, err := job.Run(ctx, def)
	var tooMany *reconcile.TooManyError
	if !errors.As(err, &tooMany) || res.Shredded != 0 {
		t.Fatalf("five records without a payment method, four allowed: %v, %+v", err, res)
	}
	if n := vaulted(t, s, append(orphans, adopted)...); n != 5 {
		t.Fatalf("%d of the five left, want all: none is shredded when there are too many", n)
	}

	dry := def
	dry.DryRun = true
	res, err = job.Run(ctx, dry)
	if err != nil || res.Checked != 8 || len(res.Unclaimed) != 5 || res.Shredded != 0 {
		t.Fatalf("dry run: %v, %+v", err, res)
	}
	for _, r := range res.Unclaimed {
		if !slices.Contains(append(orphans, adopted), r.ID) {
			t.Fatalf("dry run found %s, which is not an orphan", r.ID)
		}
	}
	// The merchant creates the payment method with one of them after all
	// (core-api takes any token the vault holds for the account).
	newCore(s, tok, "").ok(t, http.StatusCreated, http.MethodPost, "/payment-methods", map[string]any{"method": "card", "id": adopted})

	job.MaxShreds = 5
	res, err = job.Run(ctx, def)
	if err != nil || res.Checked != 8 || res.Shredded != 4 || res.Gone != 0 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if n := vaulted(t, s, orphans...); n != 0 {
		t.Fatalf("%d orphans left", n)
	}
	if n := vaulted(t, s, append(held, adopted, fresh, elsewhere)...); n != 6 {
		t.Fatalf("%d of the six records to keep are left", n)
	}
	s.FlushAudit(t)
	if n := auditCount(t, s, `action = 'reconcile.shred' AND outcome = 'success' AND actor = 'core-api:reconcile' AND tokens[1]::text = ANY($1)`, orphans); n != 4 {
		t.Fatalf("%d audit records of the shreds, want 4", n)
	}
	if n := auditCount(t, s, `action = 'reconcile.shred'`); n != 4 {
		t.Fatalf("%d reconcile.shred records in all, want 4", n)
	}
	for _, id := range held {
		if code, _ := internalCard(t, s, "default", id); code != http.StatusOK {
			t.Fatalf("a payment method's card: %d", code)
		}
	}

	// vault-proxy's routes as the job uses them, against its OpenAPI
	// document: a page, and the refusal of a record within the grace
	// period, which stays.
	page := s.InternalURL + zone.ReconcileRecordsPath + "?limit=2&created_before=" + url.QueryEscape(time.Now().Format(time.RFC3339Nano))
	if code, raw := s.Do(t, s.InternalClient, http.MethodGet, page, "", nil); code != http.StatusOK || !bytes.Contains(raw, []byte(`"next_after":"`)) {
		t.Fatalf("a page of vaulted records: %d %s", code, raw)
	}
	code, raw := s.Do(t, s.InternalClient, http.MethodDelete, s.InternalURL+zone.ReconcileRecordPathPrefix+fresh, "", nil, accountid.Header, "default")
	if code != http.StatusUnprocessableEntity || vaulted(t, s, fresh) != 1 {
		t.Fatalf("shredding a record within the grace period: %d %s", code, raw)
	}

	// A second instance's run while one holds the lock does not start.
	release, ok, err := s.CoreAPI.DB.LockReconciliation(ctx)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := job.Run(ctx, def); !errors.Is(err, reconcile.ErrBusy) {
		t.Fatalf("a run while another holds the lock: %v", err)
	}
	release()
	if res, err = job.Run(ctx, def); err != nil || res.Shredded != 0 || len(res.Unclaimed) != 0 {
		t.Fatalf("again: %v, %+v", err, res)
	}
}

// core-api runs the reconciliation by itself, every interval, and stops
// it when it shuts down.
func TestReconcileRunsPeriodicallyInCoreAPI(t *testing.T) {
	s := stack.Start(t, withReconcileGrace(reconcileGrace), func(_ *vpapp.Config, c *coreapp.Config) {
		c.VaultReconcileInterval, c.VaultReconcileGrace = 100*time.Millisecond, reconcileGrace
	})
	held := vaultCard(t, s, s.Token(t, pmScopes...), "4111111111111111", "")["id"].(string)
	id := orphan(t, s, "default", vaultproxy.KindCard)
	for deadline := time.Now().Add(20 * time.Second); vaulted(t, s, id) != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("core-api did not shred the orphan by itself")
		}
	}
	if vaulted(t, s, held) != 1 {
		t.Fatal("core-api shredded a payment method's card")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.CoreAPI.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("core-api did not stop its reconciliation at shutdown")
	}
	assertNoCardDataLogged(t, s, "4111111111111111")
}
