package mockcard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/shared/apierror"
)

// Statuses of an authorization.
const (
	statusAuthorized = "authorized"
	statusCaptured   = "captured"
	statusVoided     = "voided"
	statusDeclined   = "declined"
	statusFailed     = "failed"
	statusPending    = "pending" // received; the result follows by notification
)

// maxOperations bounds the captures, voids and refunds of one
// authorization, each of which keeps its answer.
const maxOperations = 100

// Authorization is one authorization as mock-card keeps it; its JSON is
// the wire shape (docs/sandbox/mock-card.md). It holds no card number:
// the scheme and the check results only.
type Authorization struct {
	Type                string  `json:"type"`
	ID                  string  `json:"id"`
	IdempotencyKey      string  `json:"idempotency_key"`
	Status              string  `json:"status"`
	Amount              int64   `json:"amount"`
	Currency            string  `json:"currency"`
	AuthorizedAmount    int64   `json:"authorized_amount"`
	CapturedAmount      int64   `json:"captured_amount"`
	RefundedAmount      int64   `json:"refunded_amount"`
	ResponseCode        string  `json:"response_code"`
	ResponseMessage     string  `json:"response_message"`
	DeclineCode         *string `json:"decline_code"`
	AVSResult           *string `json:"avs_result"`
	CVVResult           *string `json:"cvv_result"`
	Scheme              *string `json:"scheme"`
	SchemeTransactionID *string `json:"scheme_transaction_id"`
	MerchantInitiated   bool    `json:"merchant_initiated"`
	PaymentSource       string  `json:"payment_source"`
	// The descriptors the authorization was sent with (null: none): what
	// the buyer's statement would show, answered so that a sandbox user
	// sees which of a connector's settings and options arrived.
	MerchantDescriptor *string `json:"merchant_descriptor"`
	SoftDescriptor     *string `json:"soft_descriptor"`
	// PreviousSchemeTransactionID is the request's, as sent (null when
	// none): a test can see what a connector sent.
	PreviousSchemeTransactionID *string `json:"previous_scheme_transaction_id"`
	// ThreeDSecure is the 3-D Secure data the authorization was sent
	// with (null: none).
	ThreeDSecure *ThreeDSecure `json:"three_d_secure"`
	// CartItems are the request's, as sent (empty when none).
	CartItems []CartItem  `json:"cart_items"`
	Captures  []Operation `json:"captures"`
	Refunds   []Operation `json:"refunds"`
	CreatedAt time.Time   `json:"created_at"`
	VoidedAt  *time.Time  `json:"voided_at"`

	// answers are the stored answers of its captures, voids and refunds.
	answers map[opKey]*stored
	// notifyURL is where results that come later go (notify.go);
	// result is a pending authorization's decision, until notified.
	notifyURL string
	result    *Authorization
}

// Operation is one capture or refund in an authorization's lists.
type Operation struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
	Amount         int64  `json:"amount"`
	// Status is succeeded, or for an amount answered later (notify.go)
	// pending, then succeeded or failed with FailureCode.
	Status      string    `json:"status"`
	FailureCode *string   `json:"failure_code"`
	CreatedAt   time.Time `json:"created_at"`
}

type opKey struct{ kind, idempotencyKey string }

// newAuthorization records req as the verdict v decided it.
func newAuthorization(key string, req *authorizeRequest, v verdict, now time.Time) *Authorization {
	a := &Authorization{
		Type: "authorization", ID: newID("auth_"), IdempotencyKey: key, Status: statusDeclined,
		Amount: req.Amount, Currency: req.Currency,
		ResponseCode: v.response.code, ResponseMessage: v.response.message,
		AVSResult: v.avs, CVVResult: v.cvv,
		MerchantInitiated: req.MerchantInitiated, PaymentSource: req.PaymentSource,
		MerchantDescriptor: nonEmpty(req.MerchantDescriptor), SoftDescriptor: nonEmpty(req.SoftDescriptor),
		Captures: []Operation{}, Refunds: []Operation{},
		CreatedAt: now, answers: map[opKey]*stored{},
	}
	if v.scheme != "" {
		a.Scheme = ptr(string(v.scheme))
	}
	if req.PreviousSchemeTransactionID != "" {
		a.PreviousSchemeTransactionID = ptr(req.PreviousSchemeTransactionID)
	}
	a.ThreeDSecure = req.ThreeDSecure
	if a.CartItems = req.CartItems; a.CartItems == nil {
		a.CartItems = []CartItem{}
	}
	a.notifyURL = req.NotificationURL
	switch {
	case v.approved:
		a.Status, a.AuthorizedAmount = statusAuthorized, req.Amount
		a.SchemeTransactionID = ptr(schemeTransactionID(v.scheme, now))
		if req.Capture {
			a.Status, a.CapturedAmount = statusCaptured, req.Amount
		}
	case v.response.failed:
		a.Status, a.DeclineCode = statusFailed, ptr(v.response.declineCode)
	default:
		a.DeclineCode = ptr(v.response.declineCode)
	}
	return a
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// opKind is one kind of operation on an authorization: its path segment,
// what it does and the counter it moves.
type opKind struct {
	name    string
	apply   func(a *Authorization, amount *int64, key string, now time.Time) error
	counter func(*Stats) *int64
}

var (
	captureOp = opKind{"captures", capture, func(s *Stats) *int64 { return &s.Captures }}
	voidOp    = opKind{"voids", void, func(s *Stats) *int64 { return &s.Voids }}
	refundOp  = opKind{"refunds", refund, func(s *Stats) *int64 { return &s.Refunds }}
)

// capture takes amount (nil: all that is left) of what is authorized and
// not yet captured.
func capture(a *Authorization, amount *int64, key string, now time.Time) error {
	if a.Status != statusAuthorized && a.Status != statusCaptured {
		return apierror.New(http.StatusUnprocessableEntity, "authorization_not_capturable",
			"the authorization is "+a.Status+": only an authorized one can be captured")
	}
	n, err := take(amount, a.AuthorizedAmount-a.CapturedAmount, "amount_exceeds_authorized", "capture")
	if err != nil {
		return err
	}
	a.Status, a.CapturedAmount = statusCaptured, a.CapturedAmount+n
	a.Captures = append(a.Captures, newOperation("cap_", key, n, amount, now))
	return nil
}

// void releases an authorization of which nothing is captured.
func void(a *Authorization, _ *int64, _ string, now time.Time) error {
	if a.Status != statusAuthorized {
		return apierror.New(http.StatusUnprocessableEntity, "authorization_not_voidable",
			"the authorization is "+a.Status+": only an authorized one with nothing captured can be voided")
	}
	a.Status, a.VoidedAt = statusVoided, &now
	return nil
}

// refund gives back amount (nil: all that is left) of what was captured.
func refund(a *Authorization, amount *int64, key string, now time.Time) error {
	if a.CapturedAmount == 0 {
		return apierror.New(http.StatusUnprocessableEntity, "authorization_not_refundable",
			"the authorization is "+a.Status+" with nothing captured: there is nothing to refund")
	}
	n, err := take(amount, a.CapturedAmount-a.RefundedAmount, "amount_exceeds_captured", "refund")
	if err != nil {
		return err
	}
	a.RefundedAmount += n
	a.Refunds = append(a.Refunds, newOperation("ref_", key, n, amount, now))
	return nil
}

// take is the amount an operation moves: amount, or all that is left when
// nil, refused with code when more than is left (or nothing is).
func take(amount *int64, left int64, code, what string) (int64, error) {
	n := left
	if amount != nil {
		n = *amount
	}
	if n > left || n == 0 {
		return 0, apierror.New(http.StatusUnprocessableEntity, code, fmt.Sprintf("the %s amount exceeds what is left (%d)", what, left))
	}
	return n, nil
}

// fingerprint identifies a request body for the idempotency check.
type fingerprint [sha256.Size]byte

// stored is an answer kept for its idempotency key.
type stored struct {
	fingerprint fingerprint
	status      int
	body        []byte
}

// keyEntry is one idempotency key of POST /v1/authorizations.
type keyEntry struct {
	fingerprint fingerprint
	auth        *Authorization // nil: the key's requests recorded nothing
	answer      *stored
	requests    int64
	charges     int64
}

// Stats are the simulator's counters since it started
// (GET /sandbox/stats).
type Stats struct {
	Type                    string    `json:"type"` // "mock-card-stats"
	AuthorizationRequests   int64     `json:"authorization_requests"`
	Replays                 int64     `json:"replays"`
	Charges                 int64     `json:"charges"`
	Captures                int64     `json:"captures"`
	Voids                   int64     `json:"voids"`
	Refunds                 int64     `json:"refunds"`
	StoredAuthorizations    int       `json:"stored_authorizations"`
	ForgottenAuthorizations int64     `json:"forgotten_authorizations"`
	Key                     *KeyStats `json:"idempotency_key,omitempty"`
}

// KeyStats count what one idempotency key of POST /v1/authorizations
// did: requests received, authorizations created (1 at most, or the
// idempotency check is broken).
type KeyStats struct {
	Key      string `json:"key"`
	Requests int64  `json:"requests"`
	Charges  int64  `json:"charges"`
}

var (
	errNotFound      = apierror.NotFound("authorization not found")
	errKeyReused     = apierror.IdempotencyKeyReused("this Idempotency-Key was used with another request body")
	errTooManyOps    = apierror.New(http.StatusUnprocessableEntity, "too_many_operations", fmt.Sprintf("an authorization takes at most %d captures, voids and refunds", maxOperations))
	errNoStoredReply = errors.New("mockcard: no answer stored")
)

// store holds the authorizations in memory, at most max of them: the
// oldest key is forgotten with its authorization when a new key comes.
// One mutex guards it; nothing slow happens under it (a held answer waits
// after the store has answered).
type store struct {
	mu     sync.Mutex
	max    int
	byKey  map[string]*keyEntry
	byID   map[string]*Authorization
	order  []string // keys, oldest first, from head
	head   int
	totals Stats

	hmacKey []byte // fingerprints; random per process
}

func newStore(max int) *store {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (Go 1.24+)
	return &store{max: max, byKey: map[string]*keyEntry{}, byID: map[string]*Authorization{}, hmacKey: k}
}

// fingerprint is an HMAC of v's JSON: the request as decoded, so spacing
// and the order of its fields do not count. It is keyed because the body
// holds a card number (a plain hash of one would be guessable).
func (s *store) fingerprint(v any) fingerprint {
	b, _ := json.Marshal(v) // plain structs: never fails
	defer clear(b)
	m := hmac.New(sha256.New, s.hmacKey)
	m.Write(b)
	var f fingerprint
	m.Sum(f[:0])
	return f
}

// authorize answers an authorization request under key: the stored
// answer when the key has one (replay true), or a, recorded with body as
// its answer. a nil (the processor failed) records nothing and returns
// errNoStoredReply.
func (s *store) authorize(key string, f fingerprint, a *Authorization, body []byte) (*stored, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.totals.AuthorizationRequests++
	e := s.byKey[key]
	if e == nil {
		e = &keyEntry{fingerprint: f}
		s.insert(key, e)
	}
	e.requests++
	switch {
	case e.fingerprint != f:
		return nil, false, errKeyReused
	case e.answer != nil:
		s.totals.Replays++
		return e.answer, true, nil
	case a == nil:
		return nil, false, errNoStoredReply
	}
	e.auth, e.answer = a, &stored{fingerprint: f, status: http.StatusCreated, body: body}
	e.charges++
	s.totals.Charges++
	s.byID[a.ID] = a
	return e.answer, false, nil
}

// insert adds a key, forgetting the oldest ones beyond max.
func (s *store) insert(key string, e *keyEntry) {
	for len(s.byKey) >= s.max {
		old := s.order[s.head]
		s.order[s.head] = ""
		s.head++
		if oe := s.byKey[old]; oe.auth != nil {
			delete(s.byID, oe.auth.ID)
			s.totals.ForgottenAuthorizations++
		}
		delete(s.byKey, old)
	}
	if s.head > len(s.order)/2 {
		s.order = append(s.order[:0], s.order[s.head:]...)
		s.head = 0
	}
	s.order = append(s.order, key)
	s.byKey[key] = e
}

// operate runs one capture, void or refund on authorization id under key:
// the stored answer when the key has one (replay true), else the
// operation, whose answer (the authorization after it) is stored.
func (s *store) operate(id string, op opKind, key string, f fingerprint, amount *int64, now time.Time) (*stored, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.byID[id]
	if a == nil {
		return nil, false, errNotFound
	}
	k := opKey{op.name, key}
	if st := a.answers[k]; st != nil {
		if st.fingerprint != f {
			return nil, false, errKeyReused
		}
		s.totals.Replays++
		return st, true, nil
	}
	if len(a.answers) >= maxOperations {
		return nil, false, errTooManyOps
	}
	if err := op.apply(a, amount, key, now); err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(a)
	if err != nil {
		return nil, false, err
	}
	st := &stored{fingerprint: f, status: http.StatusOK, body: body}
	a.answers[k] = st
	*op.counter(&s.totals)++
	return st, false, nil
}

// get is the authorization with id as it is now.
func (s *store) get(id string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.byID[id]
	if a == nil {
		return nil, errNotFound
	}
	return json.Marshal(a)
}

// lookup is the authorization created under an idempotency key, as it is
// now.
func (s *store) lookup(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byKey[key]
	if e == nil || e.auth == nil {
		return nil, apierror.NotFound("no authorization was created with this idempotency key")
	}
	return json.Marshal(e.auth)
}

// stats are the counters, and those of key when it is not empty.
func (s *store) stats(key string) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.totals
	st.Type, st.StoredAuthorizations = "mock-card-stats", len(s.byID)
	if key != "" {
		st.Key = &KeyStats{Key: key}
		if e := s.byKey[key]; e != nil {
			st.Key.Requests, st.Key.Charges = e.requests, e.charges
		}
	}
	return st
}
