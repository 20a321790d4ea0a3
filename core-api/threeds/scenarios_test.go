package threeds_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/threeds"
	"github.com/payorch/shared/pagination"
)

var ctx = context.Background()

func setup(t *testing.T) (*threeds.Service, *postgres.DB) {
	t.Helper()
	db := postgrestest.New(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO merchant_accounts (id, display_name) VALUES ('other', 'Other')`); err != nil {
		t.Fatal(err)
	}
	return &threeds.Service{Store: postgres.ThreeDSStore{DB: db}}, db
}

func outcome(auth, result string) coreapi.Optional[coreapi.ThreeDSOutcome] {
	return coreapi.Some(coreapi.ThreeDSOutcome{AuthenticationStatus: auth, ResultStatus: result})
}

func create(t *testing.T, s *threeds.Service, merchant string, f coreapi.ThreeDSScenarioFields) *coreapi.ThreeDSScenario {
	t.Helper()
	sc, err := s.Create(ctx, merchant, f)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return sc
}

// order is the account's scenario ids in evaluation order, checking that
// priorities are exactly 1..n.
func order(t *testing.T, s *threeds.Service, merchant string) []string {
	t.Helper()
	page, err := s.List(ctx, merchant, pagination.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(page))
	for i, sc := range page {
		if sc.Priority != i+1 {
			t.Fatalf("scenario %d of %d has priority %d", i+1, len(page), sc.Priority)
		}
		ids[i] = sc.ID
	}
	return ids
}

func TestScenarioOrder(t *testing.T) {
	s, _ := setup(t)
	a := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", "")})
	b := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("N", "")})
	c := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("C", "Y"), Priority: coreapi.Some(1)})
	d := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("R", ""), Priority: coreapi.Some(99)})
	if a.Outcome.Version != "2.2.0" || d.Priority != 4 || c.Priority != 1 {
		t.Fatalf("version %q, priorities c %d d %d", a.Outcome.Version, c.Priority, d.Priority)
	}
	want := func(ids ...string) {
		t.Helper()
		if got := order(t, s, "default"); !slices.Equal(got, ids) {
			t.Fatalf("order = %v, want %v", got, ids)
		}
	}
	want(c.ID, a.ID, b.ID, d.ID)

	if _, err := s.Update(ctx, "default", d.ID, coreapi.ThreeDSScenarioFields{Priority: coreapi.Some(2)}); err != nil {
		t.Fatal(err)
	}
	want(c.ID, d.ID, a.ID, b.ID)
	if _, err := s.Update(ctx, "default", c.ID, coreapi.ThreeDSScenarioFields{Priority: coreapi.Some(100)}); err != nil {
		t.Fatal(err)
	}
	want(d.ID, a.ID, b.ID, c.ID)
	moved, err := s.Move(ctx, "default", c.ID, threeds.Move{BeforeID: a.ID})
	if err != nil || moved.Priority != 2 {
		t.Fatalf("move before: %v %+v", err, moved)
	}
	want(d.ID, c.ID, a.ID, b.ID)
	if _, err := s.Move(ctx, "default", d.ID, threeds.Move{AfterID: b.ID}); err != nil {
		t.Fatal(err)
	}
	want(c.ID, a.ID, b.ID, d.ID)
	if _, err := s.Move(ctx, "default", d.ID, threeds.Move{AfterID: c.ID}); err != nil {
		t.Fatal(err)
	}
	want(c.ID, d.ID, a.ID, b.ID)
	if err := s.Delete(ctx, "default", d.ID); err != nil {
		t.Fatal(err)
	}
	want(c.ID, a.ID, b.ID)

	// An update leaves what it does not name alone.
	up, err := s.Update(ctx, "default", a.ID, coreapi.ThreeDSScenarioFields{Conditions: coreapi.Some(coreapi.ThreeDSConditions{BIN: ptr("4111")})})
	if err != nil || up.Outcome.AuthenticationStatus != "Y" || up.Priority != 2 || *up.Conditions.BIN != "4111" {
		t.Fatalf("update: %v %+v", err, up)
	}
	got, err := s.Get(ctx, "default", a.ID)
	if err != nil || got.Conditions.BIN == nil || *got.Conditions.BIN != "4111" {
		t.Fatalf("get: %v %+v", err, got)
	}

	// Another account sees none of them, and has an order of its own.
	for name, err := range map[string]error{
		"get":    func() error { _, err := s.Get(ctx, "other", a.ID); return err }(),
		"update": func() error { _, err := s.Update(ctx, "other", a.ID, coreapi.ThreeDSScenarioFields{}); return err }(),
		"move":   func() error { _, err := s.Move(ctx, "other", a.ID, threeds.Move{AfterID: b.ID}); return err }(),
		"delete": s.Delete(ctx, "other", a.ID),
		"unknown": func() error {
			_, err := s.Get(ctx, "default", uuid.NewString())
			return err
		}(),
	} {
		if !errors.Is(err, coreapi.ErrNotFound) {
			t.Errorf("%s in another account: %v, want ErrNotFound", name, err)
		}
	}
	o := create(t, s, "other", coreapi.ThreeDSScenarioFields{Outcome: outcome("A", "")})
	if o.Priority != 1 {
		t.Fatalf("other account's first scenario at %d", o.Priority)
	}
}

func TestScenarioRefusals(t *testing.T) {
	s, _ := setup(t)
	a := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", "")})
	for name, tc := range map[string]struct {
		call    func() error
		pointer string
	}{
		"no outcome": {func() error { _, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{}); return err }, "/outcome"},
		"C without result": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("C", "")})
			return err
		}, "/outcome/result/transaction_status"},
		"result without C": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", "N")})
			return err
		}, "/outcome/result"},
		"bad status": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("X", "")})
			return err
		}, "/outcome/authentication/transaction_status"},
		"bad result": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("C", "A")})
			return err
		}, "/outcome/result/transaction_status"},
		"bad version": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: coreapi.Some(coreapi.ThreeDSOutcome{Version: "1.0.2", AuthenticationStatus: "Y"})})
			return err
		}, "/outcome/version"},
		"bad bin": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", ""),
				Conditions: coreapi.Some(coreapi.ThreeDSConditions{BIN: ptr("411111111")})})
			return err
		}, "/conditions/bin"},
		"bad priority": {func() error {
			_, err := s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", ""), Priority: coreapi.Some(0)})
			return err
		}, "/priority"},
		"move to itself": {func() error { _, err := s.Move(ctx, "default", a.ID, threeds.Move{BeforeID: a.ID}); return err }, "/before_id"},
		"move to nowhere": {func() error {
			_, err := s.Move(ctx, "default", a.ID, threeds.Move{AfterID: uuid.NewString()})
			return err
		}, "/after_id"},
	} {
		var ve *coreapi.ValidationError
		if err := tc.call(); !errors.As(err, &ve) || ve.Problems[0].Pointer != tc.pointer {
			t.Errorf("%s: %v, want a problem at %s", name, err, tc.pointer)
		}
	}
}

// Concurrent creates, moves and deletes are applied one after another:
// the order stays 1..n with every scenario once.
func TestScenarioConcurrentReorders(t *testing.T) {
	s, _ := setup(t)
	var ids []string
	for range 6 {
		ids = append(ids, create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("Y", "")}).ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch i % 4 {
			case 0:
				_, err = s.Update(ctx, "default", ids[i%6], coreapi.ThreeDSScenarioFields{Priority: coreapi.Some(1 + i%5)})
			case 1:
				_, err = s.Move(ctx, "default", ids[i%6], threeds.Move{AfterID: ids[(i+1)%6]})
			case 2:
				_, err = s.Create(ctx, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("N", ""), Priority: coreapi.Some(2)})
			case 3:
				_, err = s.Move(ctx, "default", ids[i%6], threeds.Move{BeforeID: ids[(i+2)%6]})
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got := order(t, s, "default")
	if len(got) != 12 {
		t.Fatalf("%d scenarios, want 12", len(got))
	}
}

func TestCandidates(t *testing.T) {
	s, _ := setup(t)
	p := coreapi.ThreeDSPayment{FirstName: "Jane", LastName: "Doe", EmailAddress: "Jane@Example.com", Amount: 1299,
		ExternalIdentifier: "order-1", BIN: "41111111"}
	if got, err := s.Candidates(ctx, "default", p); err != nil || len(got) != 0 {
		t.Fatalf("no scenarios: %+v %v", got, err)
	}
	create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("N", ""),
		Conditions: coreapi.Some(coreapi.ThreeDSConditions{Amount: ptr[int64](1300)})})
	challenge := create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("C", "Y"),
		Conditions: coreapi.Some(coreapi.ThreeDSConditions{EmailAddress: ptr("jane@example.COM"), BIN: ptr("4111")})})
	create(t, s, "default", coreapi.ThreeDSScenarioFields{Outcome: outcome("R", "")})
	got, err := s.Candidates(ctx, "default", p)
	if err != nil || len(got) != 1 || got[0].ID != challenge.ID || got[0].Outcome.ResultStatus != "Y" {
		t.Fatalf("candidates: %+v %v", got, err)
	}
	// Scenarios of another account do not apply.
	if got, _ := s.Candidates(ctx, "other", p); len(got) != 0 {
		t.Fatalf("other account: %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }
