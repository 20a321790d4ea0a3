package paymentservices_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/vaulttransit/vaulttransittest"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/testsupport"
)

var ctx = context.Background()

// apiKey is the test secret: it must never be found in the database.
const apiKey = "mc_test_s3cr3tSERVICEkey0042"

type env struct {
	s   *paymentservices.Service
	db  *postgres.DB
	dbs *testsupport.Databases
}

func setup(t *testing.T) env {
	t.Helper()
	dbs := postgrestest.Migrated(t)
	db := postgrestest.Open(t, dbs.CoreDSN)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO merchant_accounts (id, display_name) VALUES ('other', 'Other')`); err != nil {
		t.Fatal(err)
	}
	s := &paymentservices.Service{
		Store:      postgres.PaymentServicesStore{DB: db},
		Connectors: connector.NewRegistry(connector.MockCard{}, connector.MockBank{}),
		Crypter:    vaulttransittest.New(t).Client,
	}
	return env{s: s, db: db, dbs: dbs}
}

// jsonEqual compares two JSON documents by value (jsonb writes its own
// spacing).
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatalf("not JSON: %s / %s", a, b)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// fields is a valid mock-card payment service; mutate changes it.
func fields(mutate ...func(*coreapi.PaymentServiceFields)) coreapi.PaymentServiceFields {
	f := coreapi.PaymentServiceFields{
		Connector: "mock-card", DisplayName: coreapi.Some("Mock card"),
		Settings:    json.RawMessage(`{"merchant_descriptor":"ACME SHOP"}`),
		Credentials: json.RawMessage(`{"api_key":"` + apiKey + `"}`),
	}
	for _, m := range mutate {
		m(&f)
	}
	return f
}

func create(t *testing.T, e env, merchant string, f coreapi.PaymentServiceFields) *coreapi.PaymentService {
	t.Helper()
	ps, err := e.s.Create(ctx, merchant, f)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return ps
}

// pointers lists a validation error's pointers, sorted.
func pointers(t *testing.T, err error) []string {
	t.Helper()
	var ve *coreapi.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a validation error, got %v", err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.Pointer)
		if strings.Contains(p.Message, "s3cr3t") {
			t.Errorf("a message repeats the credential: %q", p.Message)
		}
	}
	slices.Sort(out)
	return out
}

func TestCreateValidatesAgainstTheConnectorsSchemas(t *testing.T) {
	e := setup(t)
	raw := func(s string) func(*coreapi.PaymentServiceFields) {
		return func(f *coreapi.PaymentServiceFields) { f.Settings = json.RawMessage(s) }
	}
	creds := func(s string) func(*coreapi.PaymentServiceFields) {
		return func(f *coreapi.PaymentServiceFields) { f.Credentials = json.RawMessage(s) }
	}
	cases := []struct {
		name string
		f    coreapi.PaymentServiceFields
		want []string
	}{
		{"no connector", fields(func(f *coreapi.PaymentServiceFields) { f.Connector = "" }), []string{"/connector"}},
		{"unknown connector", fields(func(f *coreapi.PaymentServiceFields) { f.Connector = "stripe" }), []string{"/connector"}},
		// mock-bank is configured for pix: its own credentials, no settings.
		{"another connector's configuration", fields(func(f *coreapi.PaymentServiceFields) { f.Connector = "mock-bank" }),
			[]string{"/credentials/api_key", "/credentials/webhook_secret", "/settings/merchant_descriptor"}},
		{"another method", fields(func(f *coreapi.PaymentServiceFields) { f.Method = "bank" }), []string{"/method"}},
		{"no credentials", fields(func(f *coreapi.PaymentServiceFields) { f.Credentials = nil }), []string{"/credentials"}},
		{"null credentials", fields(creds(`null`)), []string{"/credentials"}},
		{"credentials without the api key", fields(creds(`{}`)), []string{"/credentials/api_key"}},
		{"api key too short", fields(creds(`{"api_key":"short"}`)), []string{"/credentials/api_key"}},
		{"api key of another type", fields(creds(`{"api_key":42}`)), []string{"/credentials/api_key"}},
		{"api key with other characters", fields(creds(`{"api_key":"mc_test_{{ CARD_NUMBER_1 }}"}`)), []string{"/credentials/api_key"}},
		{"unknown credential", fields(creds(`{"api_key":"` + apiKey + `","secret":"x"}`)), []string{"/credentials/secret"}},
		{"credentials not an object", fields(creds(`["x"]`)), []string{"/credentials"}},
		{"unknown setting", fields(raw(`{"merchant_descriptor":"ACME","timeout":3}`)), []string{"/settings/timeout"}},
		{"descriptor too long", fields(raw(`{"merchant_descriptor":"ACME SHOP INTERNATIONAL"}`)), []string{"/settings/merchant_descriptor"}},
		{"descriptor with braces", fields(raw(`{"merchant_descriptor":"{{ X }}"}`)), []string{"/settings/merchant_descriptor"}},
		{"settings not an object", fields(raw(`"x"`)), []string{"/settings"}},
		{"null settings", fields(raw(`null`)), []string{"/settings"}},
		{"empty display name", fields(func(f *coreapi.PaymentServiceFields) { f.DisplayName = coreapi.Some("") }), []string{"/display_name"}},
		{"default while inactive", fields(func(f *coreapi.PaymentServiceFields) {
			f.Default, f.Active = coreapi.Some(true), coreapi.Some(false)
		}), []string{"/default"}},
		{"several at once", fields(raw(`{"x":1}`), creds(`{}`)), []string{"/credentials/api_key", "/settings/x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.s.Create(ctx, "default", tc.f)
			if got := pointers(t, err); !slices.Equal(got, tc.want) {
				t.Fatalf("pointers %v, want %v", got, tc.want)
			}
		})
	}
	page, err := e.s.List(ctx, "default", pagination.Page{Limit: 10})
	if err != nil || len(page) != 0 {
		t.Fatalf("refused creations stored %d (%v)", len(page), err)
	}
}

// The answer and the store's reads say which credentials are set, never
// their values; the database holds ciphertext only.
func TestCredentialsAreNeverStoredInTheClear(t *testing.T) {
	e := setup(t)
	ps := create(t, e, "default", fields())
	if !slices.Equal(ps.CredentialsSet, []string{"api_key"}) || ps.Method != coreapi.MethodCard || !ps.Active || ps.Default {
		t.Fatalf("created %+v", ps)
	}
	if string(ps.Settings) != `{"merchant_descriptor":"ACME SHOP"}` {
		t.Fatalf("settings %s", ps.Settings)
	}
	got, err := e.s.Get(ctx, "default", ps.ID)
	if err == nil && jsonEqual(t, got.Settings, ps.Settings) {
		got.Settings = ps.Settings
	}
	if err != nil || !reflect.DeepEqual(got, ps) {
		t.Fatalf("get %+v (%v), want %+v", got, err, ps)
	}
	var ct string
	if err := e.db.Pool.QueryRow(ctx, `SELECT credentials_ciphertext FROM payment_services WHERE id = $1`, ps.ID).Scan(&ct); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ct, "vault:v1:") || strings.Contains(ct, "s3cr3t") {
		t.Fatalf("stored credentials %q", ct)
	}
	if dump := e.dbs.Dump(t, e.dbs.Core.Name); strings.Contains(dump, "s3cr3t") || !strings.Contains(dump, ps.ID) {
		t.Fatal("the database dump holds the credential, or is not a dump of the table")
	}
	_, cfg, err := e.s.ForOperation(ctx, "default", ps.ID)
	if err != nil || cfg.Credentials["api_key"].Reveal() != apiKey || cfg.Settings.String("merchant_descriptor") != "ACME SHOP" {
		t.Fatalf("configuration %v (%v)", cfg, err)
	}
	if s := fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg); strings.Contains(s, "s3cr3t") {
		t.Fatalf("a configuration prints its credentials: %s", s)
	}
}

// A ciphertext copied to another payment service's row does not decrypt
// there: it is bound to its own merchant account and id.
func TestCiphertextsDoNotMoveBetweenRows(t *testing.T) {
	e := setup(t)
	a := create(t, e, "default", fields())
	b := create(t, e, "default", fields(func(f *coreapi.PaymentServiceFields) {
		f.Credentials = json.RawMessage(`{"api_key":"mc_test_another0key00"}`)
	}))
	other := create(t, e, "other", fields())
	for _, dst := range []*coreapi.PaymentService{b, other} {
		if _, err := e.db.Pool.Exec(ctx, `UPDATE payment_services SET credentials_ciphertext = (SELECT credentials_ciphertext FROM payment_services WHERE id = $1) WHERE id = $2`, a.ID, dst.ID); err != nil {
			t.Fatal(err)
		}
		if _, cfg, err := e.s.ForOperation(ctx, dst.MerchantAccountID, dst.ID); err == nil {
			t.Fatalf("a copied ciphertext decrypted for %s: %v", dst.MerchantAccountID, cfg)
		}
	}
}

func TestPartialUpdates(t *testing.T) {
	e := setup(t)
	ps := create(t, e, "default", fields())

	got, err := e.s.Update(ctx, "default", ps.ID, coreapi.PaymentServiceFields{DisplayName: coreapi.Optional[string]{Set: true, Null: true}})
	if err != nil || got.DisplayName != nil || !jsonEqual(t, got.Settings, ps.Settings) || !got.Active {
		t.Fatalf("clearing the display name: %+v (%v)", got, err)
	}
	// Settings replaced as a whole; the credentials kept.
	got, err = e.s.Update(ctx, "default", ps.ID, coreapi.PaymentServiceFields{Settings: json.RawMessage(`{}`)})
	if err != nil || !jsonEqual(t, got.Settings, []byte(`{}`)) || !slices.Equal(got.CredentialsSet, []string{"api_key"}) {
		t.Fatalf("replacing settings: %+v (%v)", got, err)
	}
	if _, cfg, err := e.s.ForOperation(ctx, "default", ps.ID); err != nil || cfg.Credentials["api_key"].Reveal() != apiKey {
		t.Fatalf("credentials after a settings update: %v", err)
	}
	// Credentials replaced when given.
	if _, err := e.s.Update(ctx, "default", ps.ID, coreapi.PaymentServiceFields{Credentials: json.RawMessage(`{"api_key":"mc_test_rotated0key00"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, cfg, err := e.s.ForOperation(ctx, "default", ps.ID); err != nil || cfg.Credentials["api_key"].Reveal() != "mc_test_rotated0key00" {
		t.Fatalf("credentials after rotation: %v", err)
	}
	for name, tc := range map[string]struct {
		f    coreapi.PaymentServiceFields
		want []string
	}{
		"bad settings":    {coreapi.PaymentServiceFields{Settings: json.RawMessage(`{"merchant_descriptor":1}`)}, []string{"/settings/merchant_descriptor"}},
		"null settings":   {coreapi.PaymentServiceFields{Settings: json.RawMessage(`null`)}, []string{"/settings"}},
		"bad credentials": {coreapi.PaymentServiceFields{Credentials: json.RawMessage(`{"api_key":""}`)}, []string{"/credentials/api_key"}},
		"null active":     {coreapi.PaymentServiceFields{Active: coreapi.Optional[bool]{Set: true, Null: true}}, []string{"/active"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.s.Update(ctx, "default", ps.ID, tc.f)
			if got := pointers(t, err); !slices.Equal(got, tc.want) {
				t.Fatalf("pointers %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := e.s.Update(ctx, "other", ps.ID, coreapi.PaymentServiceFields{Active: coreapi.Some(false)}); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("another account's update: %v", err)
	}
}

// Credentials given in an update are merged into the stored ones: those
// named are replaced (null drops an optional one), the others kept, and
// the result is checked against the connector's schema.
func TestCredentialsPartialReplacement(t *testing.T) {
	e := setup(t)
	const (
		bankKey    = "mb_test_s3cr3t_key_0001"
		bankSecret = "whsec_s3cr3t_bank_0001"
		cardHook   = "whsec_s3cr3t_card_0001"
	)
	bank := coreapi.PaymentServiceFields{Connector: "mock-bank", Method: coreapi.MethodPix,
		Credentials: json.RawMessage(`{"api_key":"` + bankKey + `","webhook_secret":"` + bankSecret + `"}`)}
	card := fields(func(f *coreapi.PaymentServiceFields) {
		f.Credentials = json.RawMessage(`{"api_key":"` + apiKey + `","webhook_secret":"` + cardHook + `"}`)
	})
	for _, tc := range []struct {
		name    string
		create  coreapi.PaymentServiceFields
		update  string
		want    map[string]string // the credentials after; nil: refused, unchanged
		invalid []string          // the refusal's pointers
	}{
		{"one of two replaced", bank, `{"webhook_secret":"whsec_s3cr3t_bank_0002"}`,
			map[string]string{"api_key": bankKey, "webhook_secret": "whsec_s3cr3t_bank_0002"}, nil},
		{"the other of two replaced", bank, `{"api_key":"mb_test_s3cr3t_key_0002"}`,
			map[string]string{"api_key": "mb_test_s3cr3t_key_0002", "webhook_secret": bankSecret}, nil},
		{"both replaced", bank, `{"api_key":"mb_test_s3cr3t_key_0002","webhook_secret":"whsec_s3cr3t_bank_0002"}`,
			map[string]string{"api_key": "mb_test_s3cr3t_key_0002", "webhook_secret": "whsec_s3cr3t_bank_0002"}, nil},
		{"none named", bank, `{}`, map[string]string{"api_key": bankKey, "webhook_secret": bankSecret}, nil},
		{"an optional one dropped", card, `{"webhook_secret":null}`, map[string]string{"api_key": apiKey}, nil},
		{"an optional one added", fields(), `{"webhook_secret":"` + cardHook + `"}`,
			map[string]string{"api_key": apiKey, "webhook_secret": cardHook}, nil},
		{"a required one dropped", bank, `{"api_key":null}`, nil, []string{"/credentials/api_key"}},
		{"an unknown name", bank, `{"webhook_secret":"whsec_s3cr3t_bank_0002","password":"s3cr3t-0000"}`, nil, []string{"/credentials/password"}},
		{"an unknown name dropped", bank, `{"password":null}`, nil, []string{"/credentials/password"}},
		{"a bad value", bank, `{"api_key":"s3cr3t-no-prefix"}`, nil, []string{"/credentials/api_key"}},
		{"not an object", bank, `["s3cr3t"]`, nil, []string{"/credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := create(t, e, "default", tc.create)
			_, before, err := e.s.ForOperation(ctx, "default", ps.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.s.Update(ctx, "default", ps.ID, coreapi.PaymentServiceFields{Credentials: json.RawMessage(tc.update)})
			want := tc.want
			if tc.invalid != nil {
				if p := pointers(t, err); !slices.Equal(p, tc.invalid) {
					t.Fatalf("pointers %v, want %v", p, tc.invalid)
				}
				want = map[string]string{}
				for k, v := range before.Credentials {
					want[k] = v.Reveal()
				}
			} else if err != nil {
				t.Fatal(err)
			} else if names := slices.Sorted(maps.Keys(want)); !slices.Equal(got.CredentialsSet, names) {
				t.Errorf("credentials_set = %v, want %v", got.CredentialsSet, names)
			}
			_, cfg, err := e.s.ForOperation(ctx, "default", ps.ID)
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string]string{}
			for k, v := range cfg.Credentials {
				stored[k] = v.Reveal()
			}
			if !reflect.DeepEqual(stored, want) {
				t.Errorf("stored credentials = %v, want %v", stored, want)
			}
		})
	}
}

// One default per merchant account and method: making one the default
// unsets the previous one; an inactive one cannot be it.
func TestDefaultSwitching(t *testing.T) {
	e := setup(t)
	dflt := func(f *coreapi.PaymentServiceFields) { f.Default = coreapi.Some(true) }
	a := create(t, e, "default", fields(dflt))
	b := create(t, e, "default", fields(dflt))
	other := create(t, e, "other", fields(dflt))
	defaults := func() []string {
		t.Helper()
		var ids []string
		rows, err := e.db.Pool.Query(ctx, `SELECT id::text FROM payment_services WHERE is_default AND merchant_account_id = 'default'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			ids = append(ids, id)
		}
		return ids
	}
	if got := defaults(); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("defaults %v, want the newer %s", got, b.ID)
	}
	if got, err := e.s.Get(ctx, "other", other.ID); err != nil || !got.Default {
		t.Fatal("another account's default moved")
	}
	if _, err := e.s.Update(ctx, "default", a.ID, coreapi.PaymentServiceFields{Default: coreapi.Some(true)}); err != nil {
		t.Fatal(err)
	}
	if got := defaults(); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("defaults %v, want %s", got, a.ID)
	}
	ps, _, err := e.s.ForPayment(ctx, "default", nil, coreapi.MethodCard)
	if err != nil || ps.ID != a.ID {
		t.Fatalf("routing by default: %+v (%v)", ps, err)
	}
	// Deactivating the default must say default false too.
	_, err = e.s.Update(ctx, "default", a.ID, coreapi.PaymentServiceFields{Active: coreapi.Some(false)})
	if got := pointers(t, err); !slices.Equal(got, []string{"/active"}) {
		t.Fatalf("deactivating the default: %v", got)
	}
	if _, err := e.s.Update(ctx, "default", a.ID, coreapi.PaymentServiceFields{Active: coreapi.Some(false), Default: coreapi.Some(false)}); err != nil {
		t.Fatal(err)
	}
	if ps, _, err := e.s.ForPayment(ctx, "default", nil, coreapi.MethodCard); err != nil || ps != nil {
		t.Fatalf("routing without a default: %+v (%v)", ps, err)
	}

	// Concurrent moves of the default end with exactly one, and none fails.
	var ids []string
	for range 6 {
		ids = append(ids, create(t, e, "default", fields()).ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Go(func() {
			_, err := e.s.Update(ctx, "default", id, coreapi.PaymentServiceFields{Default: coreapi.Some(true)})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent default move: %v", err)
		}
	}
	if got := defaults(); len(got) != 1 || !slices.Contains(ids, got[0]) {
		t.Fatalf("defaults after concurrent moves: %v", got)
	}
}

// Routing by id: the account's own, active, for the method; a deleted one
// is gone for new payments but still configures operations.
func TestForPayment(t *testing.T) {
	e := setup(t)
	active := create(t, e, "default", fields())
	inactive := create(t, e, "default", fields(func(f *coreapi.PaymentServiceFields) { f.Active = coreapi.Some(false) }))
	deleted := create(t, e, "default", fields())
	if err := e.s.Delete(ctx, "default", deleted.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Delete(ctx, "default", deleted.ID); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	foreign := create(t, e, "other", fields())
	for _, tc := range []struct {
		name   string
		id     string
		method string
		want   error
	}{
		{"active", active.ID, coreapi.MethodCard, nil},
		{"inactive", inactive.ID, coreapi.MethodCard, coreapi.ErrPaymentServiceInactive},
		{"deleted", deleted.ID, coreapi.MethodCard, coreapi.ErrPaymentServiceNotFound},
		{"another account's", foreign.ID, coreapi.MethodCard, coreapi.ErrPaymentServiceNotFound},
		{"another method", active.ID, "bank", coreapi.ErrPaymentServiceMethod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, cfg, err := e.s.ForPayment(ctx, "default", &tc.id, tc.method)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want == nil && (ps.ID != tc.id || cfg.Credentials["api_key"].Reveal() != apiKey) {
				t.Fatalf("routed to %+v", ps)
			}
		})
	}
	if _, err := e.s.Get(ctx, "default", deleted.ID); !errors.Is(err, coreapi.ErrNotFound) {
		t.Fatalf("get a deleted one: %v", err)
	}
	if ps, cfg, err := e.s.ForOperation(ctx, "default", deleted.ID); err != nil || ps.ID != deleted.ID || cfg.Credentials["api_key"].Reveal() != apiKey {
		t.Fatalf("a deleted one's operations: %v", err)
	}
	list, err := e.s.List(ctx, "default", pagination.Page{Limit: 10})
	if err != nil || len(list) != 2 {
		t.Fatalf("list %d (%v), want the two not deleted", len(list), err)
	}
}

// Production registers no sandbox connector: mock-card cannot be
// configured there.
func TestProductionConfiguresNoSandboxConnector(t *testing.T) {
	e := setup(t)
	e.s.Connectors = connector.NewRegistry()
	_, err := e.s.Create(ctx, "default", fields())
	if got := pointers(t, err); !slices.Equal(got, []string{"/connector"}) {
		t.Fatalf("pointers %v", got)
	}
}

// A merchant account's payment services go with it: deleting the account
// (as the runtime role does) takes them, deleted ones included.
func TestAccountDeletionTakesItsPaymentServices(t *testing.T) {
	e := setup(t)
	kept := create(t, e, "other", fields())
	gone := create(t, e, "other", fields())
	if err := e.s.Delete(ctx, "other", gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(ctx, `DELETE FROM merchant_accounts WHERE id = 'other'`); err != nil {
		t.Fatalf("delete the account: %v", err)
	}
	var n int
	if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM payment_services WHERE id = ANY($1)`, []string{kept.ID, gone.ID}).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d payment services left (%v)", n, err)
	}
}
