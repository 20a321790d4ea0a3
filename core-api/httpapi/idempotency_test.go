package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
)

// charge is a money-moving route for the tests: it counts its runs and
// answers with a body no second run could repeat. Its body says how it
// ends: {"outcome":"ok"} 201, "declined" a 422 error, "fail" a 500,
// "panic" a panic.
type charge struct {
	runs    atomic.Int32
	started chan struct{} // a run has started, when set
	proceed chan struct{} // a run waits for it, when set
}

func (c *charge) handle(w http.ResponseWriter, r *http.Request, caller httpapi.Caller) error {
	var in struct {
		Outcome string `json:"outcome"`
	}
	if err := httpapi.DecodeStrict(r, &in); err != nil {
		return err
	}
	n := c.runs.Add(1)
	if c.started != nil {
		c.started <- struct{}{}
	}
	if c.proceed != nil {
		<-c.proceed
	}
	switch in.Outcome {
	case "declined":
		return apierror.Unprocessable("declined")
	case "fail":
		return fmt.Errorf("the processor is down")
	case "panic":
		panic("the handler broke")
	}
	return httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"run": n, "id": uuid.NewString(), "account": caller.MerchantAccountID})
}

const testEndpoint = "charges.create"

// chargeServer is one core-api instance (its own pool on db's DSN) with
// the charge route at POST /charges/{id}, and POST /other under another
// endpoint name.
func chargeServer(t *testing.T, dsn string, c *charge, lease time.Duration) *httptest.Server {
	t.Helper()
	db := postgrestest.Open(t, dsn)
	return chargeServerOn(t, db, c, lease)
}

func chargeServerOn(t *testing.T, db *postgres.DB, c *charge, lease time.Duration) *httptest.Server {
	t.Helper()
	authz, token := testAuthFor(t, []string{accountid.Default, "other"}, "charges.write")
	log := slog.New(slog.DiscardHandler)
	d := httpapi.Deps{Log: log, Auth: authz, Idempotency: &idempotency.Service{Store: db, Lease: lease}}
	rt := httpapi.NewRouter(log)
	rt.Handle("POST /charges/{id}", d.Idempotent("charges.write", testEndpoint, c.handle))
	rt.Handle("POST /other", d.Idempotent("charges.write", "other.create", c.handle))
	srv := httptest.NewServer(withToken(rt, token))
	t.Cleanup(srv.Close)
	return srv
}

// withToken adds the bearer token to every request, so tests write only
// what they vary.
func withToken(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(w, r)
	})
}

type answer struct {
	status   int
	body     []byte
	replayed bool
}

// post sends body to path on srv with key (none when "") and headers
// (name, value pairs).
func post(t *testing.T, srv *httptest.Server, path, key, body string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(idempotency.Header, key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return answer{status: resp.StatusCode, body: b, replayed: resp.Header.Get(httpapi.ReplayedHeader) == "true"}
}

// wantError checks a is the error envelope with status and code.
func wantError(t *testing.T, a answer, status int, code string) {
	t.Helper()
	e, err := apierror.Parse(a.body)
	if a.status != status || err != nil || e.Code != code {
		t.Fatalf("= %d %s (%v), want %d %s", a.status, a.body, err, status, code)
	}
}

const okBody = `{"outcome":"ok"}`

func TestIdempotentReplay(t *testing.T) {
	dsn := postgrestest.Migrated(t).CoreDSN
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"a success", okBody, http.StatusCreated},
		{"a 4xx answer", `{"outcome":"declined"}`, http.StatusUnprocessableEntity},
		{"a request refused by validation", `{"outcome":1}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &charge{}
			srv := chargeServer(t, dsn, c, 0)
			key := uuid.NewString()
			first := post(t, srv, "/charges/1", key, tc.body)
			if first.status != tc.status || first.replayed {
				t.Fatalf("first = %d %s (replayed %v), want %d", first.status, first.body, first.replayed, tc.status)
			}
			// The same instance, and another one (its own pool: an instance
			// started after a restart).
			for _, s := range []*httptest.Server{srv, chargeServer(t, dsn, c, 0)} {
				again := post(t, s, "/charges/1", key, tc.body)
				if again.status != first.status || !bytes.Equal(again.body, first.body) || !again.replayed {
					t.Fatalf("again = %d %s (replayed %v), want %d %s replayed", again.status, again.body, again.replayed, first.status, first.body)
				}
			}
			if want := int32(map[bool]int{true: 0, false: 1}[tc.status == http.StatusBadRequest]); c.runs.Load() != want {
				t.Fatalf("the handler's work ran %d times, want %d", c.runs.Load(), want)
			}
		})
	}
}

func TestIdempotentKeyReusedWithAnotherRequest(t *testing.T) {
	c := &charge{}
	srv := chargeServer(t, postgrestest.Migrated(t).CoreDSN, c, 0)
	key := uuid.NewString()
	if a := post(t, srv, "/charges/1", key, okBody); a.status != http.StatusCreated {
		t.Fatalf("first = %d %s", a.status, a.body)
	}
	for _, tc := range []struct{ name, path, body string }{
		{"another body", "/charges/1", `{"outcome":"declined"}`},
		{"the same body in other bytes", "/charges/1", `{ "outcome": "ok" }`},
		{"another path of the endpoint", "/charges/2", okBody},
		{"a query", "/charges/1?x=1", okBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, post(t, srv, tc.path, key, tc.body), http.StatusUnprocessableEntity, apierror.CodeIdempotencyKeyReused)
		})
	}
	if c.runs.Load() != 1 {
		t.Fatalf("ran %d times, want 1", c.runs.Load())
	}
}

func TestIdempotentConcurrentRequest(t *testing.T) {
	c := &charge{started: make(chan struct{}, 1), proceed: make(chan struct{})}
	dsn := postgrestest.Migrated(t).CoreDSN
	srv, other := chargeServer(t, dsn, c, 0), chargeServer(t, dsn, c, 0)
	key := uuid.NewString()
	first := make(chan answer, 1)
	go func() { first <- post(t, srv, "/charges/1", key, okBody) }()
	<-c.started
	for _, s := range []*httptest.Server{srv, other} {
		wantError(t, post(t, s, "/charges/1", key, okBody), http.StatusConflict, apierror.CodeConcurrentRequest)
	}
	close(c.proceed)
	a := <-first
	if a.status != http.StatusCreated {
		t.Fatalf("first = %d %s", a.status, a.body)
	}
	if again := post(t, other, "/charges/1", key, okBody); !bytes.Equal(again.body, a.body) {
		t.Fatalf("after it ended = %d %s, want the replay of %s", again.status, again.body, a.body)
	}
}

// Identical requests at once, spread over two instances: one runs, the
// others are refused while it runs or get its answer after.
func TestIdempotentHundredAtOnce(t *testing.T) {
	c := &charge{}
	dsn := postgrestest.Migrated(t).CoreDSN
	srvs := []*httptest.Server{chargeServer(t, dsn, c, 0), chargeServer(t, dsn, c, 0)}
	key := uuid.NewString()
	answers := make([]answer, 100)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = post(t, srvs[i%2], "/charges/1", key, okBody)
		}()
	}
	wg.Wait()
	if c.runs.Load() != 1 {
		t.Fatalf("ran %d times, want 1", c.runs.Load())
	}
	var created []byte
	for _, a := range answers {
		if a.status == http.StatusCreated && !a.replayed {
			if created != nil {
				t.Fatalf("two first answers: %s and %s", created, a.body)
			}
			created = a.body
		}
	}
	for _, a := range answers {
		switch {
		case a.status == http.StatusConflict:
			wantError(t, a, http.StatusConflict, apierror.CodeConcurrentRequest)
		case a.status != http.StatusCreated || !bytes.Equal(a.body, created):
			t.Fatalf("= %d %s, want 409 or %s", a.status, a.body, created)
		}
	}
}

// A request whose instance died holding the key: once the lease has run
// out, a retry takes the key over and runs the handler; before, 409.
func TestIdempotentLeaseTakeOver(t *testing.T) {
	const lease = 2 * time.Second
	dbs := postgrestest.Migrated(t)
	db := postgrestest.Open(t, dbs.CoreDSN)
	c := &charge{}
	srv := chargeServerOn(t, db, c, lease)
	key := uuid.NewString()
	// The dead instance's claim, as its Idempotent made it.
	dead := &idempotency.Service{Store: postgrestest.Open(t, dbs.CoreDSN), Lease: lease}
	s := idempotency.Scope{MerchantAccountID: accountid.Default, Endpoint: testEndpoint, Key: key}
	fp := idempotency.FingerprintOf(http.MethodPost, "/charges/1", []byte(okBody))
	claim, err := dead.Begin(context.Background(), s, fp)
	if err != nil || claim.Owner == "" {
		t.Fatalf("claim = %+v, %v", claim, err)
	}
	wantError(t, post(t, srv, "/charges/1", key, okBody), http.StatusConflict, apierror.CodeConcurrentRequest)
	time.Sleep(lease + 100*time.Millisecond)
	wantError(t, post(t, srv, "/charges/1", key, `{"outcome":"declined"}`), http.StatusUnprocessableEntity, apierror.CodeIdempotencyKeyReused)
	a := post(t, srv, "/charges/1", key, okBody)
	if a.status != http.StatusCreated || a.replayed || c.runs.Load() != 1 {
		t.Fatalf("after the lease = %d %s (replayed %v, runs %d), want a run", a.status, a.body, a.replayed, c.runs.Load())
	}
	// The dead claim's late answer is not kept over the retry's.
	if err := dead.Complete(context.Background(), s, claim.Owner, idempotency.Response{Status: 201, Body: []byte(`{}`)}); err != idempotency.ErrLost {
		t.Fatalf("the stale claim's Complete = %v, want ErrLost", err)
	}
	if again := post(t, srv, "/charges/1", key, okBody); !bytes.Equal(again.body, a.body) || !again.replayed {
		t.Fatalf("again = %d %s, want the replay of %s", again.status, again.body, a.body)
	}
}

func TestIdempotentScope(t *testing.T) {
	c := &charge{}
	srv := chargeServer(t, postgrestest.Migrated(t).CoreDSN, c, 0)
	key := uuid.NewString()
	first := post(t, srv, "/charges/1", key, okBody)
	for _, tc := range []struct {
		name, path string
		headers    []string
	}{
		{"another merchant account", "/charges/1", []string{accountid.Header, "other"}},
		{"another endpoint", "/other", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.runs.Load()
			a := post(t, srv, tc.path, key, okBody, tc.headers...)
			if a.status != http.StatusCreated || a.replayed || bytes.Equal(a.body, first.body) || c.runs.Load() != before+1 {
				t.Fatalf("= %d %s (replayed %v), want a run of its own", a.status, a.body, a.replayed)
			}
		})
	}
}

// A server error or a panic gives the key back: the client's retry runs
// afresh. A request without a key runs each time.
func TestIdempotentRunsAgain(t *testing.T) {
	c := &charge{}
	srv := chargeServer(t, postgrestest.Migrated(t).CoreDSN, c, 0)
	for _, tc := range []struct{ name, key, body string }{
		{"after a 5xx", uuid.NewString(), `{"outcome":"fail"}`},
		{"after a panic", uuid.NewString(), `{"outcome":"panic"}`},
		{"without a key", "", okBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.runs.Load()
			a := post(t, srv, "/charges/1", tc.key, tc.body)
			b := post(t, srv, "/charges/1", tc.key, tc.body)
			if a.status != b.status || b.replayed || c.runs.Load() != before+2 {
				t.Fatalf("= %d then %d (replayed %v), ran %d times, want 2 runs", a.status, b.status, b.replayed, c.runs.Load()-before)
			}
		})
	}
}

func TestIdempotencyKeyHeaderIsChecked(t *testing.T) {
	c := &charge{}
	srv := chargeServer(t, postgrestest.Migrated(t).CoreDSN, c, 0)
	ok255 := strings.Repeat("k", 255)
	if a := post(t, srv, "/charges/1", ok255, okBody); a.status != http.StatusCreated {
		t.Fatalf("a key of 255 = %d %s", a.status, a.body)
	}
	for _, tc := range []struct {
		name   string
		values []string
	}{
		{"empty", []string{""}},
		{"256 characters", []string{ok255 + "k"}},
		{"a control character", []string{"a\x01b"}},
		{"a tab", []string{"a\tb"}},
		{"not ASCII", []string{"clé"}},
		{"given twice", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Straight to the handler: a client refuses some of these.
			req := httptest.NewRequest(http.MethodPost, "/charges/1", strings.NewReader(okBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header[idempotency.Header] = tc.values
			rec := httptest.NewRecorder()
			srv.Config.Handler.ServeHTTP(rec, req)
			a := answer{status: rec.Code, body: rec.Body.Bytes()}
			wantError(t, a, http.StatusBadRequest, apierror.CodeBadRequest)
			e, _ := apierror.Parse(a.body)
			if len(e.Details) != 1 || e.Details[0].Location != apierror.LocationHeader || e.Details[0].Pointer != idempotency.Header {
				t.Fatalf("details %+v, want one naming the header", e.Details)
			}
		})
	}
	if c.runs.Load() != 1 {
		t.Fatalf("ran %d times, want 1", c.runs.Load())
	}
}

// resumable is a route that attaches its resource to the key before it
// "moves money", as the transaction routes do: its handler counts runs,
// its resume counts resumes and names the resource it was given.
type resumable struct {
	runs, resumes atomic.Int32
}

func (rs *resumable) handle(w http.ResponseWriter, r *http.Request, _ httpapi.Caller) error {
	var in struct {
		Outcome string `json:"outcome"`
	}
	if err := httpapi.DecodeStrict(r, &in); err != nil {
		return err
	}
	rs.runs.Add(1)
	if err := idempotency.Attach(r.Context(), "resource-"+r.PathValue("id")); err != nil {
		return err
	}
	if in.Outcome == "fail" { // after the money moved: the answer is lost
		return fmt.Errorf("the settlement failed")
	}
	return httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"made": "resource-" + r.PathValue("id")})
}

func (rs *resumable) resume(w http.ResponseWriter, _ *http.Request, _ httpapi.Caller, resource string) error {
	rs.resumes.Add(1)
	return httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"resumed": resource})
}

func resumableServer(t *testing.T, db *postgres.DB, rs *resumable, lease time.Duration) *httptest.Server {
	t.Helper()
	authz, token := testAuthFor(t, []string{accountid.Default}, "charges.write")
	log := slog.New(slog.DiscardHandler)
	d := httpapi.Deps{Log: log, Auth: authz, Idempotency: &idempotency.Service{Store: db, Lease: lease}}
	rt := httpapi.NewRouter(log)
	rt.Handle("POST /resumable/{id}", d.Resumable("charges.write", testEndpoint, rs.handle, rs.resume))
	srv := httptest.NewServer(withToken(rt, token))
	t.Cleanup(srv.Close)
	return srv
}

// A request that attached its resource and then failed (5xx) or died
// (its claim's lease ran out) is resumed by the retry with the same key:
// the resume runs with the resource, not the handler, and its answer is
// the key's from then on. A request without a key never resumes.
func TestIdempotentResumesAttachedResource(t *testing.T) {
	const lease = time.Second
	dbs := postgrestest.Migrated(t)
	db := postgrestest.Open(t, dbs.CoreDSN)
	rs := &resumable{}
	srv := resumableServer(t, db, rs, lease)
	counts := func() (int32, int32) { return rs.runs.Load(), rs.resumes.Load() }

	t.Run("after a 5xx", func(t *testing.T) {
		key := uuid.NewString()
		body := `{"outcome":"fail"}`
		if a := post(t, srv, "/resumable/1", key, body); a.status != http.StatusInternalServerError {
			t.Fatalf("first = %d %s, want 500", a.status, a.body)
		}
		runs, resumes := counts()
		a := post(t, srv, "/resumable/1", key, body)
		if a.status != http.StatusCreated || !strings.Contains(string(a.body), `"resumed":"resource-1"`) || a.replayed {
			t.Fatalf("retry = %d %s (replayed %v), want the resumed resource", a.status, a.body, a.replayed)
		}
		if r2, s2 := counts(); r2 != runs || s2 != resumes+1 {
			t.Fatalf("runs %d->%d, resumes %d->%d: want one resume and no run", runs, r2, resumes, s2)
		}
		if again := post(t, srv, "/resumable/1", key, body); !again.replayed || !bytes.Equal(again.body, a.body) {
			t.Fatalf("third = %d %s, want the replay of the resume", again.status, again.body)
		}
	})

	t.Run("after the instance died", func(t *testing.T) {
		key := uuid.NewString()
		dead := &idempotency.Service{Store: postgrestest.Open(t, dbs.CoreDSN), Lease: lease}
		s := idempotency.Scope{MerchantAccountID: accountid.Default, Endpoint: testEndpoint, Key: key}
		claim, err := dead.Begin(context.Background(), s, idempotency.FingerprintOf(http.MethodPost, "/resumable/2", []byte(okBody)))
		if err != nil || claim.Owner == "" {
			t.Fatalf("claim = %+v, %v", claim, err)
		}
		if err := idempotency.Attach(dead.WithRun(context.Background(), s, claim.Owner), "resource-2"); err != nil {
			t.Fatal(err)
		}
		wantError(t, post(t, srv, "/resumable/2", key, okBody), http.StatusConflict, apierror.CodeConcurrentRequest)
		time.Sleep(lease + 100*time.Millisecond)
		runs, _ := counts()
		a := post(t, srv, "/resumable/2", key, okBody)
		if a.status != http.StatusCreated || !strings.Contains(string(a.body), `"resumed":"resource-2"`) {
			t.Fatalf("after the lease = %d %s, want the resumed resource", a.status, a.body)
		}
		if r2, _ := counts(); r2 != runs {
			t.Fatal("the handler ran again over an attached resource")
		}
		// The dead claim can attach nothing more: the retry holds the key.
		if err := idempotency.Attach(dead.WithRun(context.Background(), s, claim.Owner), "resource-x"); err != idempotency.ErrLost {
			t.Fatalf("the stale claim's Attach = %v, want ErrLost", err)
		}
	})

	t.Run("without a key", func(t *testing.T) {
		runs, resumes := counts()
		for range 2 {
			if a := post(t, srv, "/resumable/3", "", okBody); a.status != http.StatusCreated || !strings.Contains(string(a.body), `"made"`) {
				t.Fatalf("= %d %s", a.status, a.body)
			}
		}
		if r2, s2 := counts(); r2 != runs+2 || s2 != resumes {
			t.Fatalf("runs %d->%d, resumes %d->%d: want two runs", runs, r2, resumes, s2)
		}
	})
}
