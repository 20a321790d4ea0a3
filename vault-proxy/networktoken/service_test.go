package networktoken_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/testsupport"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/postgres"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/payorch/vault-proxy/vaulting/vaultingtest"
)

var _ forward.NetworkTokens = (*networktoken.Service)(nil)

// counting wraps the sandbox to count calls to the TSP.
type counting struct {
	networktoken.Provider
	provisions, deletes, suspends, resumes atomic.Int64
}

func (c *counting) Provision(ctx context.Context, d networktoken.CardData) ([]byte, card.Expiry, string, error) {
	c.provisions.Add(1)
	return c.Provider.Provision(ctx, d)
}
func (c *counting) Delete(ctx context.Context, ref string) error {
	c.deletes.Add(1)
	return c.Provider.Delete(ctx, ref)
}
func (c *counting) Suspend(ctx context.Context, ref string) error {
	c.suspends.Add(1)
	return c.Provider.Suspend(ctx, ref)
}
func (c *counting) Resume(ctx context.Context, ref string) error {
	c.resumes.Add(1)
	return c.Provider.Resume(ctx, ref)
}

type fixture struct {
	db     *postgres.DB
	dbs    *testsupport.Databases
	cards  *vaulting.Service
	svc    *networktoken.Service
	tsp    *counting
	audits *auditspool.Spool
	mu     sync.Mutex
	now    time.Time
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func setup(t *testing.T) *fixture {
	t.Helper()
	p := vaultingtest.New(t, nil)
	f := &fixture{db: p.DB, dbs: p.DBs, now: time.Now(), audits: p.Audits, cards: p.Service}
	f.tsp = &counting{Provider: &networktoken.Sandbox{Now: f.clock}}
	reg := &networktoken.Registry{}
	reg.Register(f.tsp, networktoken.SandboxSchemes...)
	f.svc = &networktoken.Service{Store: p.DB, Audits: f.audits, Sealer: p.Sealer, Providers: reg, Vaulting: f.cards, Now: f.clock}
	return f
}

func caller(m string) vaulting.Caller {
	return vaulting.Caller{MerchantAccountID: m, Actor: "test", RequestID: "req-1"}
}

func (f *fixture) vault(t *testing.T, m, pan string) uuid.UUID {
	t.Helper()
	rec, err := f.cards.VaultCard(context.Background(), caller(m), vaulting.CardRequest{
		Kind: vaultproxy.KindCard, Number: []byte(pan), ExpirationDate: time.Now().AddDate(3, 0, 0).Format("01/06"),
	})
	if err != nil {
		t.Fatalf("vault: %v", err)
	}
	return rec.Token
}

// reveal opens a card as the forward engine does before substituting.
func (f *fixture) reveal(t *testing.T, m string, pm uuid.UUID) *vaulting.Revealed {
	t.Helper()
	cards, o, err := f.cards.Reveal(context.Background(), caller(m), "detokenize", "test", []uuid.UUID{pm}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cards[0].Zero)
	t.Cleanup(o.Release) // the test records the uses it makes itself, if any
	return cards[0]
}

func (f *fixture) token(t *testing.T, m string, pm uuid.UUID) (string, card.Expiry, error) {
	t.Helper()
	v, exp, _, err := f.svc.Token(context.Background(), caller(m), f.reveal(t, m, pm))
	return string(v), exp, err
}

func (f *fixture) auditTrail(t *testing.T, pm uuid.UUID) string {
	t.Helper()
	if err := f.audits.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := f.db.Pool.Query(context.Background(), `SELECT purpose || ':' || outcome FROM audit_events
		WHERE action = 'network-token' AND $1 = ANY(tokens) ORDER BY id`, pm)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

func TestFirstUseProvisionsStoresAndReusesTheToken(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const pan = "4111111111111111"
	pm := f.vault(t, "m1", pan)

	dpan, exp, err := f.token(t, "m1", pm)
	if err != nil {
		t.Fatal(err)
	}
	if dpan == pan || len(dpan) != 16 || !card.Luhn([]byte(dpan)) || card.DetectScheme([]byte(dpan)) != card.SchemeVisa {
		t.Fatalf("token %s... is not a visa token distinct from the card", dpan[:6])
	}
	if !exp.IsValid() || exp.Expired(time.Now()) {
		t.Fatalf("token expiry %v", exp)
	}
	again, exp2, err := f.token(t, "m1", pm)
	if err != nil || again != dpan || exp2 != exp {
		t.Fatalf("second use: %v; the same token must be reused", err)
	}
	if n := f.tsp.provisions.Load(); n != 1 {
		t.Fatalf("%d provisionings, want 1", n)
	}

	// Cryptograms: fresh per call, 28 characters of base64, never stored.
	r := f.reveal(t, "m1", pm)
	_, _, id, err := f.svc.Token(ctx, caller("m1"), r)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := f.svc.Cryptogram(ctx, caller("m1"), r, id)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := f.svc.Cryptogram(ctx, caller("m1"), r, id)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.StdEncoding.DecodeString(string(c1)); len(c1) != 28 || err != nil || len(raw) != 20 || string(c1) == string(c2) {
		t.Fatalf("cryptograms %q %q", c1, c2)
	}

	list, err := f.svc.List(ctx, caller("m1"), pm)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %d", err, len(list))
	}
	nt := list[0]
	if nt.Status != networktoken.StatusActive || nt.Last4 != dpan[12:] || nt.Provider != "sandbox" || nt.Scheme != "visa" || nt.Expiry != exp {
		t.Fatalf("stored token %+v", nt)
	}
	if got := f.auditTrail(t, pm); got != "provision:success" {
		t.Fatalf("audit trail %q", got)
	}
	// Another merchant sees no payment method and gets no token.
	if _, err := f.svc.List(ctx, caller("m2"), pm); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant listed the tokens: %v", err)
	}

	// The token value is in no column and not in a dump of the database.
	dump := f.dbs.Dump(t, f.dbs.Vault.Name)
	if !strings.Contains(dump, "network_tokens") {
		t.Fatal("the dump has no network tokens; the test proves nothing")
	}
	for _, secret := range []string{dpan, pan, string(c1), string(c2)} {
		if strings.Contains(dump, secret) {
			t.Fatal("the vault database holds a token value, card number or cryptogram in clear")
		}
	}
}

func TestSuspendResumeDelete(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	pm := f.vault(t, "m1", "5555555555554444")
	nt, created, err := f.svc.Provision(ctx, caller("m1"), pm)
	if err != nil || !created || nt.Status != networktoken.StatusActive || nt.Scheme != "mastercard" {
		t.Fatalf("provision: %v %v %+v", err, created, nt)
	}
	again, created, err := f.svc.Provision(ctx, caller("m1"), pm)
	if err != nil || created || again.ID != nt.ID {
		t.Fatalf("second provision must return the existing token: %v %v", err, created)
	}
	dpan, _, err := f.token(t, "m1", pm)
	if err != nil || dpan[12:] != nt.Last4 || !strings.HasPrefix(dpan, "520473") {
		t.Fatalf("token of the provisioned token: %v", err)
	}

	// Another merchant cannot touch it.
	if _, err := f.svc.Suspend(ctx, caller("m2"), pm, nt.ID); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant suspended: %v", err)
	}
	if err := f.svc.Delete(ctx, caller("m2"), pm, nt.ID); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("another merchant deleted: %v", err)
	}
	// A token id under the wrong payment method is not found either.
	other := f.vault(t, "m1", "4111111111111111")
	if _, err := f.svc.Suspend(ctx, caller("m1"), other, nt.ID); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("token found under another payment method: %v", err)
	}

	sus, err := f.svc.Suspend(ctx, caller("m1"), pm, nt.ID)
	if err != nil || sus.Status != networktoken.StatusSuspended {
		t.Fatalf("suspend: %v", err)
	}
	if _, err := f.svc.Suspend(ctx, caller("m1"), pm, nt.ID); err != nil {
		t.Fatalf("suspending a suspended token: %v", err)
	}
	if _, _, err := f.token(t, "m1", pm); !errors.Is(err, networktoken.ErrSuspended) {
		t.Fatalf("suspended token used: %v", err)
	}
	if _, err := f.svc.Cryptogram(ctx, caller("m1"), f.reveal(t, "m1", pm), nt.ID); !errors.Is(err, networktoken.ErrSuspended) {
		t.Fatalf("cryptogram for a suspended token: %v", err)
	}
	if got, created, err := f.svc.Provision(ctx, caller("m1"), pm); err != nil || created || got.Status != networktoken.StatusSuspended {
		t.Fatalf("provision with a suspended token: %v %v", err, created)
	}

	res, err := f.svc.Resume(ctx, caller("m1"), pm, nt.ID)
	if err != nil || res.Status != networktoken.StatusActive {
		t.Fatalf("resume: %v", err)
	}
	if v, _, err := f.token(t, "m1", pm); err != nil || v != dpan {
		t.Fatalf("resumed token: %v", err)
	}

	if err := f.svc.Delete(ctx, caller("m1"), pm, nt.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Delete(ctx, caller("m1"), pm, nt.ID); err != nil {
		t.Fatalf("deleting a deleted token: %v", err)
	}
	if _, err := f.svc.Resume(ctx, caller("m1"), pm, nt.ID); !errors.Is(err, networktoken.ErrDeleted) {
		t.Fatalf("resume of a deleted token: %v", err)
	}
	var shredded bool
	if err := f.db.Pool.QueryRow(ctx, `SELECT ciphertext IS NULL AND wrapped_record_key IS NULL AND data_key_id IS NULL
		FROM network_tokens WHERE id = $1`, nt.ID).Scan(&shredded); err != nil || !shredded {
		t.Fatalf("deleted token still sealed in its row: %v", err)
	}
	// Deleted means gone: the next use provisions a new token.
	next, _, err := f.token(t, "m1", pm)
	if err != nil || next == dpan {
		t.Fatalf("after delete: %v (same token: %v)", err, next == dpan)
	}
	list, _ := f.svc.List(ctx, caller("m1"), pm)
	if len(list) != 2 || list[0].Status != networktoken.StatusDeleted || list[1].Status != networktoken.StatusActive || list[1].Last4 != next[12:] {
		t.Fatalf("list after delete and reuse: %d tokens", len(list))
	}
	if f.tsp.suspends.Load() != 1 || f.tsp.resumes.Load() != 1 || f.tsp.deletes.Load() != 1 || f.tsp.provisions.Load() != 2 {
		t.Fatalf("TSP calls: suspend %d resume %d delete %d provision %d", f.tsp.suspends.Load(), f.tsp.resumes.Load(), f.tsp.deletes.Load(), f.tsp.provisions.Load())
	}
	want := "provision:success,suspend:success,resume:success,delete:success,provision:success"
	if got := f.auditTrail(t, pm); got != want {
		t.Fatalf("audit trail %q, want %q", got, want)
	}

	// The payment method goes only once its live token is deleted at the
	// TSP, and its deleted tokens' rows go with it.
	if err := f.cards.Delete(ctx, caller("m1"), pm); !errors.Is(err, vaultproxy.ErrLiveNetworkToken) {
		t.Fatalf("deleting a card with a live network token: %v", err)
	}
	if err := f.svc.DeleteAll(ctx, caller("m1"), pm); err != nil {
		t.Fatal(err)
	}
	if err := f.cards.Delete(ctx, caller("m1"), pm); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM network_tokens WHERE payment_method_id = $1`, pm).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d network tokens outlived their card", n)
	}
}

func TestProvisioningFailuresStoreNothing(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	for _, tc := range []struct{ pan, reason string }{
		{"4000000000000119", networktoken.ReasonDeclined},
		{"5200000000000007", networktoken.ReasonNotEligible},
		{"3530111333300000", networktoken.ReasonSchemeNotSupported}, // jcb: no provider
	} {
		pm := f.vault(t, "m1", tc.pan)
		for range 2 { // a failure is not remembered: each use asks again
			_, _, err := f.token(t, "m1", pm)
			var pe *networktoken.ProvisioningError
			if !errors.As(err, &pe) || pe.Reason != tc.reason || strings.Contains(err.Error()+pe.Message, tc.pan) {
				t.Fatalf("%s...: %v, want %s", tc.pan[:6], err, tc.reason)
			}
		}
		if _, _, err := f.svc.Provision(ctx, caller("m1"), pm); !errors.Is(err, networktoken.ErrProvisioning) {
			t.Fatalf("API provision of %s...: %v", tc.pan[:6], err)
		}
		if _, err := f.svc.Cryptogram(ctx, caller("m1"), f.reveal(t, "m1", pm), uuid.New()); err == nil {
			t.Fatal("a cryptogram without a token")
		}
		want := "provision:failure: " + tc.reason
		if got := f.auditTrail(t, pm); got != strings.Join([]string{want, want, want}, ",") {
			t.Fatalf("audit trail %q", got)
		}
	}
	var n int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM network_tokens`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tokens stored after failures", n)
	}

	// A gift card has no network token.
	gc, err := f.cards.VaultCard(ctx, caller("m1"), vaulting.CardRequest{Kind: vaultproxy.KindGiftCard, Number: []byte("6006491234567890"), SecurityCode: []byte("1234")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.Provision(ctx, caller("m1"), gc.Token); !errors.Is(err, networktoken.ErrNotCard) {
		t.Fatalf("gift card: %v", err)
	}
	if _, err := f.svc.List(ctx, caller("m1"), gc.Token); !errors.Is(err, networktoken.ErrNotCard) {
		t.Fatalf("gift card list: %v", err)
	}
	if _, _, err := f.token(t, "m1", gc.Token); !errors.Is(err, networktoken.ErrNotCard) {
		t.Fatalf("gift card token: %v", err)
	}
}

// Without a registered provider (production today) every provisioning
// fails cleanly.
func TestNoProviderConfigured(t *testing.T) {
	f := setup(t)
	f.svc.Providers = &networktoken.Registry{}
	pm := f.vault(t, "m1", "4111111111111111")
	_, _, err := f.token(t, "m1", pm)
	var pe *networktoken.ProvisioningError
	if !errors.As(err, &pe) || pe.Reason != networktoken.ReasonSchemeNotSupported {
		t.Fatalf("%v", err)
	}
}

func TestConcurrentFirstUsesStoreOneToken(t *testing.T) {
	f := setup(t)
	pm := f.vault(t, "m1", "4111111111111111")
	const n = 8
	got := make([]string, n)
	errs := make([]error, n)
	revealed := make([]*vaulting.Revealed, n)
	for i := range revealed {
		revealed[i] = f.reveal(t, "m1", pm)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, _, err := f.svc.Token(context.Background(), caller("m1"), revealed[i])
			got[i], errs[i] = string(v), err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("use %d: %v (a different token: %v)", i, errs[i], got[i] != got[0])
		}
	}
	var rows int
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM network_tokens`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d tokens stored, want 1", rows)
	}
	// Every token provisioned and not stored was deleted at the TSP.
	if p, d := f.tsp.provisions.Load(), f.tsp.deletes.Load(); p-d != 1 {
		t.Fatalf("%d provisioned, %d released", p, d)
	}
}

// A sealed token value copied onto another token's row does not open:
// associated data binds merchant, payment method and token id.
func TestCopiedCiphertextDoesNotOpen(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	a := f.vault(t, "m1", "4111111111111111")
	b := f.vault(t, "m1", "5555555555554444")
	if _, _, err := f.token(t, "m1", a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.token(t, "m1", b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE network_tokens SET data_key_id = s.data_key_id, wrapped_record_key = s.wrapped_record_key,
		ciphertext = s.ciphertext FROM network_tokens s WHERE s.payment_method_id = $1 AND network_tokens.payment_method_id = $2`, a, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.token(t, "m1", b); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("copied ciphertext: %v, want envelope.ErrOpen", err)
	}
}

// A token past its expiry is deleted and replaced on the next use: once
// its month is over anywhere on Earth, though a card of the same expiry
// would still be accepted then (docs/network-tokens.md, Expired).
func TestExpiredTokenIsReplaced(t *testing.T) {
	f := setup(t)
	pm := f.vault(t, "m1", "4111111111111111")
	first, exp, err := f.token(t, "m1", pm)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.now = time.Date(exp.Year, time.Month(exp.Month)+1, 1, 6, 0, 0, 0, time.UTC) // 6 h into the next month in UTC
	f.mu.Unlock()
	if exp.Expired(f.clock()) {
		t.Fatal("the lenient reading already calls it expired; the test proves nothing")
	}
	second, exp2, err := f.token(t, "m1", pm)
	if err != nil || second == first || !exp2.IsValid() || exp2.Expired(f.clock()) {
		t.Fatalf("expired token not replaced: %v", err)
	}
	list, _ := f.svc.List(context.Background(), caller("m1"), pm)
	if len(list) != 2 || list[0].Status != networktoken.StatusDeleted {
		t.Fatalf("list: %d", len(list))
	}
}

// Deleting a payment method deletes its live network tokens at their TSP
// first, audited; tokens already deleted are left alone, another merchant
// account's call deletes nothing, and a payment method with no tokens, or
// none at all, is no error.
func TestDeleteAllBeforeThePaymentMethodGoes(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	pm := f.vault(t, "m1", "5555555555554444")
	first, _, err := f.svc.Provision(ctx, caller("m1"), pm)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Delete(ctx, caller("m1"), pm, first.ID); err != nil {
		t.Fatal(err)
	}
	second, created, err := f.svc.Provision(ctx, caller("m1"), pm)
	if err != nil || !created || second.ID == first.ID {
		t.Fatalf("a new token after the delete: %v %v", err, created)
	}
	if err := f.svc.DeleteAll(ctx, caller("m2"), pm); err != nil {
		t.Fatalf("another merchant's DeleteAll: %v", err)
	}
	deletes := f.tsp.deletes.Load()
	if err := f.svc.DeleteAll(ctx, caller("m1"), pm); err != nil {
		t.Fatal(err)
	}
	if n := f.tsp.deletes.Load() - deletes; n != 1 {
		t.Fatalf("%d deletions at the TSP, want 1 (the live token only)", n)
	}
	ts, err := f.svc.List(ctx, caller("m1"), pm)
	if err != nil || len(ts) != 2 || ts[0].Status != networktoken.StatusDeleted || ts[1].Status != networktoken.StatusDeleted {
		t.Fatalf("after DeleteAll: %v %+v", err, ts)
	}
	if trail := f.auditTrail(t, pm); !strings.HasSuffix(trail, "provision:success,delete:success") {
		t.Fatalf("audit trail %s", trail)
	}
	if err := f.svc.DeleteAll(ctx, caller("m1"), f.vault(t, "m1", "4111111111111111")); err != nil {
		t.Fatalf("a card without tokens: %v", err)
	}
	if err := f.svc.DeleteAll(ctx, caller("m1"), uuid.New()); err != nil {
		t.Fatalf("no such payment method: %v", err)
	}
}

// A cryptogram is for the token its request sends: once that token is
// deleted (and the card has another), or belongs to another card, it gets
// none, though the card's current token would.
func TestCryptogramBelongsToTheTokenSent(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	pm := f.vault(t, "m1", "4111111111111111")
	r := f.reveal(t, "m1", pm)
	_, _, sent, err := f.svc.Token(ctx, caller("m1"), r)
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile another request deletes it, and a third provisions anew.
	if err := f.svc.Delete(ctx, caller("m1"), pm, sent); err != nil {
		t.Fatal(err)
	}
	if _, created, err := f.svc.Provision(ctx, caller("m1"), pm); err != nil || !created {
		t.Fatalf("provision: %v %v", err, created)
	}
	if _, err := f.svc.Cryptogram(ctx, caller("m1"), r, sent); !errors.Is(err, networktoken.ErrDeleted) {
		t.Fatalf("a cryptogram for the deleted token sent: %v", err)
	}
	other := f.vault(t, "m1", "5555555555554444")
	_, _, otherID, err := f.svc.Token(ctx, caller("m1"), f.reveal(t, "m1", other))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Cryptogram(ctx, caller("m1"), r, otherID); !errors.Is(err, vaultproxy.ErrNotFound) {
		t.Fatalf("a cryptogram for another card's token: %v", err)
	}
}

// pausingStore is the real store, except that once armed its next
// CurrentNetworkToken call, having read the row, says so on read and waits
// for proceed: a use that read the token just before it was deleted.
type pausingStore struct {
	networktoken.Store
	armed         atomic.Bool
	read, proceed chan struct{}
}

func (p *pausingStore) CurrentNetworkToken(ctx context.Context, m string, pm uuid.UUID) (*networktoken.NetworkToken, error) {
	t, err := p.Store.CurrentNetworkToken(ctx, m, pm)
	if p.armed.CompareAndSwap(true, false) {
		p.read <- struct{}{}
		<-p.proceed
	}
	return t, err
}

// A use that read the token before it was deleted may finish with what it
// read, but does not leave the deleted token's record key cached
// (SECURITY.md: record keys are dropped when the record is deleted).
func TestUseRacingADeleteDoesNotCacheTheRecordKey(t *testing.T) {
	cases := []struct {
		name string
		del  func(ctx context.Context, svc *networktoken.Service, pm, id uuid.UUID) error
	}{
		{"Delete", func(ctx context.Context, svc *networktoken.Service, pm, id uuid.UUID) error {
			return svc.Delete(ctx, caller("m1"), pm, id)
		}},
		{"DeleteAll", func(ctx context.Context, svc *networktoken.Service, pm, _ uuid.UUID) error {
			return svc.DeleteAll(ctx, caller("m1"), pm)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			ctx := context.Background()
			store := &pausingStore{Store: f.db, read: make(chan struct{}), proceed: make(chan struct{})}
			svc := &networktoken.Service{Store: store, Audits: f.audits, Sealer: f.svc.Sealer, Providers: f.svc.Providers, Vaulting: f.cards, Now: f.clock}
			pm := f.vault(t, "m1", "4111111111111111")
			r := f.reveal(t, "m1", pm)
			dpan, _, id, err := svc.Token(ctx, caller("m1"), r)
			if err != nil {
				t.Fatal(err)
			}
			// From here on the only record key cached is one the racing use
			// caches.
			svc.Sealer.Purge()

			store.armed.Store(true)
			type used struct {
				value []byte
				err   error
			}
			done := make(chan used, 1)
			go func() {
				v, _, _, err := svc.Token(ctx, caller("m1"), r)
				done <- used{v, err}
			}()
			<-store.read // the token is read; now the delete
			if err := tc.del(ctx, svc, pm, id); err != nil {
				t.Fatal(err)
			}
			close(store.proceed)
			if u := <-done; u.err != nil || string(u.value) != string(dpan) {
				t.Fatalf("the use that began first: %v", u.err)
			}
			if n := svc.Sealer.CachedRecords(); n != 0 {
				t.Fatalf("the deleted token's record key is cached (%d entries)", n)
			}
		})
	}
}

// pausingTSP is the counting sandbox, except that once armed its next
// call, having been made at the TSP, says so on called and waits for
// proceed before returning: a provisioning that reaches the TSP while the
// card is being deleted, or a lifecycle operation in flight while another
// one comes.
type pausingTSP struct {
	*counting
	armed           atomic.Bool
	called, proceed chan struct{}
}

// slowFirstAudit delays the first event it records by delay.
type slowFirstAudit struct {
	vaultproxy.AuditLog
	delay time.Duration
	done  atomic.Bool
}

func (a *slowFirstAudit) Record(ctx context.Context, e vaultproxy.AuditEvent) error {
	if a.done.CompareAndSwap(false, true) {
		time.Sleep(a.delay)
	}
	return a.AuditLog.Record(ctx, e)
}

func (p *pausingTSP) pause() {
	if p.armed.CompareAndSwap(true, false) {
		p.called <- struct{}{}
		<-p.proceed
	}
}

func (p *pausingTSP) Provision(ctx context.Context, d networktoken.CardData) ([]byte, card.Expiry, string, error) {
	v, exp, ref, err := p.counting.Provision(ctx, d)
	p.pause()
	return v, exp, ref, err
}

func (p *pausingTSP) Suspend(ctx context.Context, ref string) error {
	err := p.counting.Suspend(ctx, ref)
	p.pause()
	return err
}

func (p *pausingTSP) Resume(ctx context.Context, ref string) error {
	err := p.counting.Resume(ctx, ref)
	p.pause()
	return err
}

func (p *pausingTSP) Delete(ctx context.Context, ref string) error {
	err := p.counting.Delete(ctx, ref)
	p.pause()
	return err
}

// pausing returns a service on f's store whose TSP is a pausingTSP.
func (f *fixture) pausing() (*networktoken.Service, *pausingTSP) {
	tsp := &pausingTSP{counting: f.tsp, called: make(chan struct{}), proceed: make(chan struct{})}
	reg := &networktoken.Registry{}
	reg.Register(tsp, networktoken.SandboxSchemes...)
	return &networktoken.Service{Store: f.db, Audits: f.audits, Sealer: f.svc.Sealer, Providers: reg, Vaulting: f.cards, Now: f.clock}, tsp
}

// pausedCard sets up a fixture with a pausing service and merchant m1's
// vaulted card.
func pausedCard(t *testing.T) (*fixture, *networktoken.Service, *pausingTSP, uuid.UUID) {
	t.Helper()
	f := setup(t)
	svc, tsp := f.pausing()
	return f, svc, tsp, f.vault(t, "m1", "4111111111111111")
}

// A use of the card that opened it before its deletion provisions a
// network token while the card is being deleted (DELETE
// /internal/cards/{token}: DeleteAll, then the card). Whenever the token
// is stored, it ends deleted at the TSP and nothing goes silently with the
// card: stored before the card is locked, it keeps the card until the
// next DeleteAll deletes it; stored after the card is gone, it fails, and
// the provisioning deletes it at the TSP.
func TestProvisioningRacingTheCardsDeletion(t *testing.T) {
	cases := []struct {
		name string
		// race runs the use (in the background, or not) and the deletion's
		// first round, and returns what the deletion said and the use's
		// result.
		race    func(f *fixture, svc *networktoken.Service, tsp *pausingTSP, r *vaulting.Revealed) (used <-chan error, deleteErr error)
		wantDel error
		wantUse error
	}{
		{
			name: "stored after DeleteAll, before the card is deleted",
			race: func(f *fixture, svc *networktoken.Service, _ *pausingTSP, r *vaulting.Revealed) (<-chan error, error) {
				ctx := context.Background()
				if err := svc.DeleteAll(ctx, caller("m1"), r.Card.Token); err != nil {
					return nil, err
				}
				used := make(chan error, 1)
				_, _, _, err := svc.Token(ctx, caller("m1"), r)
				used <- err
				return used, f.cards.Delete(ctx, caller("m1"), r.Card.Token)
			},
			wantDel: vaultproxy.ErrLiveNetworkToken,
		},
		{
			name: "stored after the card is deleted",
			race: func(f *fixture, svc *networktoken.Service, tsp *pausingTSP, r *vaulting.Revealed) (<-chan error, error) {
				ctx := context.Background()
				tsp.armed.Store(true)
				used := make(chan error, 1)
				go func() {
					_, _, _, err := svc.Token(ctx, caller("m1"), r)
					used <- err
				}()
				<-tsp.called // live at the TSP, not stored yet
				err := svc.DeleteAll(ctx, caller("m1"), r.Card.Token)
				if err == nil {
					err = f.cards.Delete(ctx, caller("m1"), r.Card.Token)
				}
				close(tsp.proceed)
				return used, err
			},
			wantUse: vaultproxy.ErrNotFound,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, svc, tsp, pm := pausedCard(t)
			ctx := context.Background()
			r := f.reveal(t, "m1", pm) // a forward's reveal, before the deletion starts

			used, delErr := tc.race(f, svc, tsp, r)
			if !errors.Is(delErr, tc.wantDel) {
				t.Fatalf("the deletion's first round: %v, want %v", delErr, tc.wantDel)
			}
			if err := <-used; !errors.Is(err, tc.wantUse) {
				t.Fatalf("the use: %v, want %v", err, tc.wantUse)
			}
			if delErr != nil {
				// The card and its token are kept: the next round deletes
				// the token at its TSP, then the card.
				if _, err := f.db.CurrentNetworkToken(ctx, "m1", pm); err != nil {
					t.Fatalf("the token stored during the deletion is gone: %v", err)
				}
				if err := svc.DeleteAll(ctx, caller("m1"), pm); err != nil {
					t.Fatal(err)
				}
				if err := f.cards.Delete(ctx, caller("m1"), pm); err != nil {
					t.Fatalf("the deletion's second round: %v", err)
				}
			}
			if p, d := tsp.provisions.Load(), tsp.deletes.Load(); p != 1 || d != 1 {
				t.Fatalf("the TSP provisioned %d tokens and deleted %d: a token is live at the TSP", p, d)
			}
			var rows int
			if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM network_tokens WHERE payment_method_id = $1`, pm).Scan(&rows); err != nil || rows != 0 {
				t.Fatalf("%d network token rows outlived the card (%v)", rows, err)
			}
			if _, err := f.cards.Metadata(ctx, caller("m1"), pm); !errors.Is(err, vaultproxy.ErrNotFound) {
				t.Fatalf("the card after its deletion: %v", err)
			}
		})
	}
}

// Lifecycle operations on one token take turns, on any instance: one that
// comes while another is at the TSP waits for it, and then acts on the
// status it left, so the TSP and the stored status never disagree.
func TestLifecycleOperationsTakeTurns(t *testing.T) {
	type op func(ctx context.Context, svc *networktoken.Service, pm, id uuid.UUID) (networktoken.Status, error)
	transition := func(f func(*networktoken.Service, context.Context, vaulting.Caller, uuid.UUID, uuid.UUID) (*networktoken.NetworkToken, error)) op {
		return func(ctx context.Context, svc *networktoken.Service, pm, id uuid.UUID) (networktoken.Status, error) {
			nt, err := f(svc, ctx, caller("m1"), pm, id)
			if err != nil {
				return "", err
			}
			return nt.Status, nil
		}
	}
	suspend, resume := transition((*networktoken.Service).Suspend), transition((*networktoken.Service).Resume)
	del := func(ctx context.Context, svc *networktoken.Service, pm, id uuid.UUID) (networktoken.Status, error) {
		if err := svc.Delete(ctx, caller("m1"), pm, id); err != nil {
			return "", err
		}
		return networktoken.StatusDeleted, nil
	}
	type calls struct{ suspends, resumes, deletes int64 }
	cases := []struct {
		name          string
		first, second op
		want          networktoken.Status // the second's result, and the stored status
		wantErr       error               // the second's error
		calls         calls
		audit         string
	}{
		{"resume waits for a suspend", suspend, resume, networktoken.StatusActive, nil, calls{1, 1, 0},
			"provision:success,suspend:success,resume:success"},
		{"suspend waits for a delete", del, suspend, networktoken.StatusDeleted, networktoken.ErrDeleted, calls{0, 0, 1},
			"provision:success,delete:success"},
		{"delete waits for a suspend", suspend, del, networktoken.StatusDeleted, nil, calls{1, 0, 1},
			"provision:success,suspend:success,delete:success"},
		{"delete waits for a delete", del, del, networktoken.StatusDeleted, nil, calls{0, 0, 1},
			"provision:success,delete:success"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, svc, tsp, pm := pausedCard(t)
			ctx := context.Background()
			nt, _, err := svc.Provision(ctx, caller("m1"), pm)
			if err != nil {
				t.Fatal(err)
			}
			// The first operation's record is slowed down: written after its
			// row lock is released, it would land behind the second's.
			svc.Audits = &slowFirstAudit{AuditLog: f.audits, delay: 100 * time.Millisecond}
			type result struct {
				status networktoken.Status
				err    error
			}
			run := func(o op) <-chan result {
				done := make(chan result, 1)
				go func() {
					s, err := o(ctx, svc, pm, nt.ID)
					done <- result{s, err}
				}()
				return done
			}

			tsp.armed.Store(true)
			first := run(tc.first)
			<-tsp.called // the first has changed the token at the TSP, not in the store yet
			second := run(tc.second)
			// The second must come to wait for the first's row lock.
			for deadline := time.Now().Add(10 * time.Second); ; {
				var waiting bool
				if err := f.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting {
					break
				}
				select {
				case r := <-second:
					close(tsp.proceed)
					<-first
					t.Fatalf("the second operation did not wait for the first one at the TSP: %q %v", r.status, r.err)
				case <-time.After(5 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("the second operation never came to wait")
				}
			}
			close(tsp.proceed)
			if r := <-first; r.err != nil {
				t.Fatalf("the first operation: %v", r.err)
			}
			r := <-second
			if !errors.Is(r.err, tc.wantErr) || (r.err == nil && r.status != tc.want) {
				t.Fatalf("the second operation: %q %v, want %q %v", r.status, r.err, tc.want, tc.wantErr)
			}
			if stored, err := f.db.NetworkToken(ctx, "m1", pm, nt.ID); err != nil || stored.Status != tc.want {
				t.Fatalf("stored: %v, want %q", err, tc.want)
			}
			if got := (calls{tsp.suspends.Load(), tsp.resumes.Load(), tsp.deletes.Load()}); got != tc.calls {
				t.Fatalf("TSP calls %+v, want %+v", got, tc.calls)
			}
			if got := f.auditTrail(t, pm); got != tc.audit {
				t.Fatalf("audit trail %q, want %q", got, tc.audit)
			}
		})
	}
}
