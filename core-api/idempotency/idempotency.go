// Package idempotency keeps the Idempotency-Key of money-moving requests
// (docs/api-conventions.md, "Idempotency"): the first request with a key
// claims it and runs; a retry with the same payload gets the stored
// response instead of running the work again; the same key with another
// payload, or while the first still runs, is refused. Keys live in the
// core database, so they hold across instances and restarts.
//
// A claim carries a lease (Service.Lease). A process that dies mid-request
// leaves its claim; once the lease runs out, a retry with the same payload
// takes the claim over and runs the handler again. The contract for a
// handler wrapped this way: running it again after a partial run must not
// move money twice. A transaction handler does so by recording, with
// Attach, the resource it made (the transaction, the refund) before it
// calls the connector: a retry that takes the claim over (or follows a
// 5xx) gets that resource back (Claim.Resource) and resumes it, asking
// the connector what became of it, instead of calling the connector
// again.
package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/periodic"
)

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// MaxKeyLength is the longest key accepted, in bytes (ASCII: characters).
const MaxKeyLength = 255

// Defaults of a Service.
const (
	// DefaultTTL is how long a key is kept after its first request.
	DefaultTTL = 24 * time.Hour
	// DefaultLease outlasts any request: a request's deadline is at most
	// 55 s and a draining instance waits 75 s for the last ones, so a
	// claim still held after it belongs to a process that died.
	DefaultLease = 2 * time.Minute
)

// Scope is where a key is unique: one merchant account's calls to one
// endpoint (a name the route gives, such as "transactions.create").
type Scope struct {
	MerchantAccountID string
	Endpoint          string
	Key               string
}

// Fingerprint identifies a request's payload: a SHA-256 of its method,
// its path and query, and its body bytes as sent. Byte-identical is the
// rule (Stripe's): a client's retry resends the same bytes, and no
// canonical form of JSON is needed whose rules could drift and make two
// requests that differ count as one.
type Fingerprint [sha256.Size]byte

// FingerprintOf returns the fingerprint of a request.
func FingerprintOf(method, requestURI string, body []byte) Fingerprint {
	h := sha256.New()
	// Length-prefixed, so no two different requests share a hash input.
	fmt.Fprintf(h, "%d:%s%d:%s", len(method), method, len(requestURI), requestURI)
	h.Write(body)
	var f Fingerprint
	h.Sum(f[:0])
	return f
}

// Response is a completed request's answer, kept to be replayed byte for
// byte.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Claim is the outcome of Begin.
type Claim struct {
	// Owner is set when this request holds the key and must run the
	// work, then Complete or Release it with Owner.
	Owner string
	// TakenOver says the claim was another request's whose lease ran out:
	// the work may have been partly done.
	TakenOver bool
	// Replay is set when the key already holds a completed response.
	Replay *Response
	// Resource is what an earlier run under this claim recorded with
	// Attach before it moved money ("" when none): the request is to
	// resume it, not to start over.
	Resource string
}

// Errors of Begin.
var (
	// ErrReused: the key was used with another payload.
	ErrReused = errors.New("idempotency: the key was used with another request")
	// ErrInFlight: another request holds the key and its lease runs.
	ErrInFlight = errors.New("idempotency: a request with this key is still being processed")
	// ErrLost: the claim was taken over (its lease ran out) or released;
	// this request's response was not stored.
	ErrLost = errors.New("idempotency: the claim on the key was lost")
)

// Store is core-api's database as the keys need it (postgres.DB). Times
// are the database's clock, one for every instance.
type Store interface {
	// ClaimIdempotencyKey claims s for owner with the fingerprint, for
	// lease, kept ttl: when s is free or expired, or held under the same
	// fingerprint by a claim whose lease ran out (takenOver). Otherwise it
	// claims nothing and returns the key's fingerprint, its response if
	// completed, and nothing else.
	ClaimIdempotencyKey(ctx context.Context, s Scope, f Fingerprint, owner string, lease, ttl time.Duration) (IdempotencyKeyState, error)
	// CompleteIdempotencyKey stores resp on s if owner still holds it
	// (false otherwise).
	CompleteIdempotencyKey(ctx context.Context, s Scope, owner string, resp Response) (bool, error)
	// ReleaseIdempotencyKey removes s if owner still holds it, or, when a
	// resource is attached to it, ends the lease at once: the next
	// request with the key takes it over and resumes the resource.
	ReleaseIdempotencyKey(ctx context.Context, s Scope, owner string) error
	// AttachIdempotencyKey records resource on s if owner still holds it
	// (false otherwise).
	AttachIdempotencyKey(ctx context.Context, s Scope, owner, resource string) (bool, error)
	// PurgeIdempotencyKeys removes up to limit expired keys not under a
	// running claim, skipping rows another instance is removing.
	PurgeIdempotencyKeys(ctx context.Context, limit int) (int, error)
}

// IdempotencyKeyState is what ClaimIdempotencyKey found.
type IdempotencyKeyState struct {
	Claimed     bool
	TakenOver   bool
	Fingerprint Fingerprint
	Response    *Response // completed
	Resource    string    // attached by the claim taken over
}

// Service begins, completes and releases claims on keys.
type Service struct {
	Store Store
	TTL   time.Duration // 0: DefaultTTL
	Lease time.Duration // 0: DefaultLease
}

// Begin claims s for a request with fingerprint f, or returns the stored
// response to replay; ErrReused and ErrInFlight refuse it.
func (svc *Service) Begin(ctx context.Context, s Scope, f Fingerprint) (Claim, error) {
	owner := uuid.NewString()
	st, err := svc.Store.ClaimIdempotencyKey(ctx, s, f, owner, or(svc.Lease, DefaultLease), or(svc.TTL, DefaultTTL))
	switch {
	case err != nil:
		return Claim{}, err
	case st.Claimed:
		return Claim{Owner: owner, TakenOver: st.TakenOver, Resource: st.Resource}, nil
	case st.Fingerprint != f:
		return Claim{}, ErrReused
	case st.Response != nil:
		return Claim{Replay: st.Response}, nil
	default:
		return Claim{}, ErrInFlight
	}
}

// Complete stores the response of the claim's request. ErrLost: the
// claim was taken over meanwhile, and the response of the request that
// took it over is the one kept.
func (svc *Service) Complete(ctx context.Context, s Scope, owner string, resp Response) error {
	ok, err := svc.Store.CompleteIdempotencyKey(ctx, s, owner, resp)
	if err == nil && !ok {
		err = ErrLost
	}
	return err
}

// Release gives the key back after a request that did not complete (a
// server error, a timeout): a retry runs afresh.
func (svc *Service) Release(ctx context.Context, s Scope, owner string) error {
	return svc.Store.ReleaseIdempotencyKey(ctx, s, owner)
}

// Run is a request's claim on its key, as the work behind it sees it
// (WithRun, Attach).
type Run struct {
	svc   *Service
	scope Scope
	owner string
}

type runKey struct{}

// WithRun returns ctx carrying the claim of owner on s, for Attach.
func (svc *Service) WithRun(ctx context.Context, s Scope, owner string) context.Context {
	return context.WithValue(ctx, runKey{}, &Run{svc: svc, scope: s, owner: owner})
}

// Attach records resource (an id) as what the request behind ctx made,
// before it calls a processor: should the request not complete, the next
// one with its key resumes that resource (Claim.Resource). Without a key
// it does nothing. ErrLost: the claim was taken over meanwhile, and the
// request must stop before it moves money.
func Attach(ctx context.Context, resource string) error {
	run, ok := ctx.Value(runKey{}).(*Run)
	if !ok {
		return nil
	}
	held, err := run.svc.Store.AttachIdempotencyKey(ctx, run.scope, run.owner, resource)
	if err == nil && !held {
		err = ErrLost
	}
	return err
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Purger removes expired keys periodically. Several instances may run it
// at once: each removes rows the others are not removing.
type Purger struct {
	Store Store
	Log   *slog.Logger // required by Every
	Batch int          // rows per statement (0: 1000)
}

// Run removes every expired key, a batch at a time, until none is left or
// ctx ends; it returns how many it removed.
func (p *Purger) Run(ctx context.Context) (int, error) {
	batch := p.Batch
	if batch <= 0 {
		batch = 1000
	}
	total := 0
	for {
		n, err := p.Store.PurgeIdempotencyKeys(ctx, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}

// Every runs Run every interval until ctx ends.
func (p *Purger) Every(ctx context.Context, interval time.Duration) {
	periodic.Every(ctx, interval, interval, func(ctx context.Context) {
		n, err := p.Run(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			p.Log.ErrorContext(ctx, "idempotency keys: purge failed", "purged", n, "err", err)
		case n > 0:
			p.Log.InfoContext(ctx, "idempotency keys: purged the expired", "purged", n)
		}
	})
}
