package webhooks

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	coreapi "github.com/payorch/core-api"
)

// Claim is a due delivery a dispatcher holds until its lease ends: the
// event's payload and the subscription's endpoint and sealed secrets.
type Claim struct {
	DeliveryID        int64
	EventID           string
	EventCreatedAt    time.Time // the retry window counts from it
	Payload           []byte
	Attempts          int // made before this one
	SubscriptionID    string
	MerchantAccountID string
	URL               string
	SecretVersion     int
	Secret            string  // ciphertext
	PreviousSecret    *string // ciphertext, while the rotation's grace lasts
	BasicAuth         *string // ciphertext
}

// Outcome is what one attempt of a delivery came to.
type Outcome struct {
	DeliveryID     int64
	SubscriptionID string
	// Status is succeeded, failed (given up) or pending (NextAttemptAt).
	Status        coreapi.WebhookDeliveryStatus
	NextAttemptAt *time.Time
	ResponseCode  *int
	Error         *string
	Latency       time.Duration
	At            time.Time
	// Request is what was sent (nil: nothing was); Response what came
	// back (nil: no answer).
	Request  *coreapi.WebhookRequest
	Response *coreapi.WebhookResponse
	// Gone: the endpoint answered 410 Gone; the subscription is
	// disabled.
	Gone bool
}

// DeliveryStore is the outbox as the dispatcher uses it.
type DeliveryStore interface {
	// ClaimWebhookDeliveries leases, until now+lease, up to
	// perSubscription deliveries due at now of each active subscription
	// but those in skip, oldest first; rows another dispatcher is
	// claiming are skipped (FOR UPDATE SKIP LOCKED), so each is claimed
	// once.
	ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, perSubscription int, skip []string) ([]Claim, error)
	// RecordWebhookOutcomes writes the attempts and the deliveries'
	// new state, and disables the subscriptions of Gone outcomes.
	RecordWebhookOutcomes(ctx context.Context, outcomes []Outcome) error
}

// Message is one attempt of a delivery, as the Sender posts it:
// Standard Webhooks headers (webhook-id, webhook-timestamp,
// webhook-signature) and the payload, with Basic authentication when the
// subscription has credentials.
type Message struct {
	URL                string
	ID                 string // the event's id: the same on every attempt
	Timestamp          time.Time
	Signature          string
	Body               []byte
	Username, Password string
}

// Answer is what an endpoint answered: its status, headers and the
// start of its body, or why none came (a stable text, never an address).
type Answer struct {
	Code   int // 0: no answer
	Error  string
	Header map[string][]string
	// Body is at most MaxBodyRead bytes of the answer's body; BodyCut
	// says the read stopped before its end (longer, or cut short by the
	// attempt's timeout).
	Body    []byte
	BodyCut bool
}

// MaxBodyRead is how much of an answer's body a Sender reads to keep:
// one byte past what is kept tells a longer body.
const MaxBodyRead = coreapi.MaxWebhookResponseBody + 1

// Sender posts a message to its endpoint (webhookhttp.Sender).
type Sender interface {
	Send(ctx context.Context, m Message) Answer
}

// Observer is told what the dispatcher does, for metrics; nil: nothing.
type Observer interface {
	Attempted(subscriptionID string, o Outcome)
}

// Dispatcher delivers due events. Each subscription is its own queue:
// a round claims a batch of each subscription that has none in flight in
// this process, and delivers every batch on its own goroutines, at most
// PerEndpoint at once, so a slow or dead endpoint holds only its own
// batch. Several instances share the work through the claim's row locks.
// A claim is a lease: a process that dies mid-delivery leaves its rows to
// be claimed again once the lease ends (at least once, with the same
// webhook-id).
type Dispatcher struct {
	Store    DeliveryStore
	Crypter  Crypter
	Sender   Sender
	Log      *slog.Logger
	Observer Observer
	Now      func() time.Time // nil: time.Now; tests inject a clock
	Backoff  Backoff          // zero: DefaultBackoff
	// Timeout bounds one attempt (DefaultTimeout when 0); a 2xx within
	// it is success.
	Timeout time.Duration
	// PerEndpoint is how many deliveries to one subscription are in
	// flight at once in this process; Batch how many a round claims.
	PerEndpoint int
	Batch       int
	// Poll is how often an idle dispatcher looks for due deliveries.
	Poll time.Duration
	// Lease is how long a claim holds its rows (computed from the
	// others when 0).
	Lease time.Duration

	mu      sync.Mutex
	busy    map[string]bool      // subscriptions with a batch in flight here
	resting map[string]time.Time // subscriptions whose last batch all failed: not claimed before then
	secrets map[string]secrets   // decrypted, by subscription id and version
	running sync.WaitGroup
}

// Defaults of a Dispatcher.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultPerEndpoint = 8
	DefaultBatch       = 32
	DefaultPoll        = 200 * time.Millisecond
)

type secrets struct {
	version  int
	signing  []string // current, then previous
	username string
	password string
	echoed   []string // echoedCredentials
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dispatcher) backoff() Backoff {
	if d.Backoff.Window == 0 {
		return DefaultBackoff
	}
	return d.Backoff
}

func (d *Dispatcher) timeout() time.Duration { return cmpOr(d.Timeout, DefaultTimeout) }
func (d *Dispatcher) perEndpoint() int       { return cmpOr(d.PerEndpoint, DefaultPerEndpoint) }
func (d *Dispatcher) batch() int             { return cmpOr(d.Batch, DefaultBatch) }

// lease covers a whole batch at its slowest (every attempt timing out),
// with room for recording the outcomes.
func (d *Dispatcher) lease() time.Duration {
	if d.Lease > 0 {
		return d.Lease
	}
	rounds := (d.batch() + d.perEndpoint() - 1) / d.perEndpoint()
	return time.Duration(rounds)*d.timeout() + 30*time.Second
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Run delivers until ctx ends, then waits for the batches in flight.
func (d *Dispatcher) Run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	poll := cmpOr(d.Poll, DefaultPoll)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			d.running.Wait()
			return
		case <-wake:
		case <-timer.C:
		}
		n, err := d.start(ctx, wake)
		if err != nil && ctx.Err() == nil {
			d.Log.Error("claim webhook deliveries", "err", err)
		}
		if n == 0 {
			timer.Reset(poll)
		} else {
			timer.Reset(poll / 4)
		}
	}
}

// RunOnce claims one round and delivers it, and returns how many
// deliveries it attempted: for tests that move an injected clock.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	n, err := d.start(ctx, nil)
	d.running.Wait()
	return n, err
}

// start claims a round and starts its batches; a batch that came back
// full wakes the loop for another round at once.
func (d *Dispatcher) start(ctx context.Context, wake chan struct{}) (int, error) {
	d.mu.Lock()
	if d.busy == nil {
		d.busy, d.secrets, d.resting = map[string]bool{}, map[string]secrets{}, map[string]time.Time{}
	}
	now := d.now()
	skip := make([]string, 0, len(d.busy)+len(d.resting))
	for id := range d.busy {
		skip = append(skip, id)
	}
	for id, until := range d.resting {
		if now.Before(until) {
			skip = append(skip, id)
		} else {
			delete(d.resting, id)
		}
	}
	d.mu.Unlock()
	claims, err := d.Store.ClaimWebhookDeliveries(ctx, now, d.lease(), d.batch(), skip)
	if err != nil {
		return 0, err
	}
	bySub := map[string][]Claim{}
	for _, c := range claims {
		bySub[c.SubscriptionID] = append(bySub[c.SubscriptionID], c)
	}
	d.mu.Lock()
	for id := range bySub {
		d.busy[id] = true
	}
	d.mu.Unlock()
	for id, batch := range bySub {
		d.running.Add(1)
		go func() {
			defer d.running.Done()
			// Deliveries finish, and are recorded, even while the
			// process stops: each is bounded by the timeout.
			d.deliverBatch(context.WithoutCancel(ctx), batch)
			d.mu.Lock()
			delete(d.busy, id)
			d.mu.Unlock()
			if wake != nil && len(batch) == d.batch() {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
	}
	return len(claims), nil
}

// deliverBatch delivers one subscription's claims, PerEndpoint at once,
// and records the outcomes in one round trip.
func (d *Dispatcher) deliverBatch(ctx context.Context, batch []Claim) {
	outcomes := make([]Outcome, len(batch))
	sec, err := d.secretsOf(ctx, batch[0])
	if err != nil {
		d.Log.Error("decrypt webhook secrets", "subscription_id", batch[0].SubscriptionID, "err", err)
		return // the lease ends and another round tries again
	}
	sem := make(chan struct{}, d.perEndpoint())
	var wg sync.WaitGroup
	for i, c := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			outcomes[i] = d.deliver(ctx, c, sec)
			if d.Observer != nil {
				d.Observer.Attempted(c.SubscriptionID, outcomes[i])
			}
		}()
	}
	wg.Wait()
	d.rest(batch[0].SubscriptionID, outcomes)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.Store.RecordWebhookOutcomes(rctx, outcomes); err != nil {
		d.Log.Error("record webhook attempts", "subscription_id", batch[0].SubscriptionID, "err", err)
	}
}

// rest keeps a subscription whose whole batch failed out of the claims
// until the earliest retry among them: its other due deliveries would
// only fail the same way, and claiming and recording them costs the
// database and this process what the healthy endpoints need. A dead
// endpoint is then tried one batch per back-off step, not as fast as it
// refuses.
func (d *Dispatcher) rest(subscription string, outcomes []Outcome) {
	var until time.Time
	for _, o := range outcomes {
		if o.Status == coreapi.DeliverySucceeded {
			return
		}
		if o.NextAttemptAt != nil && (until.IsZero() || o.NextAttemptAt.Before(until)) {
			until = *o.NextAttemptAt
		}
	}
	if until.IsZero() {
		return
	}
	d.mu.Lock()
	d.resting[subscription] = until.Truncate(time.Microsecond) // as the database keeps the retry's time
	d.mu.Unlock()
}

// secretsOf decrypts a subscription's secrets once per version.
func (d *Dispatcher) secretsOf(ctx context.Context, c Claim) (secrets, error) {
	d.mu.Lock()
	s, ok := d.secrets[c.SubscriptionID]
	d.mu.Unlock()
	if ok && s.version == c.SecretVersion && (c.PreviousSecret != nil) == (len(s.signing) == 2) {
		return s, nil
	}
	s = secrets{version: c.SecretVersion}
	cts := []string{c.Secret}
	if c.PreviousSecret != nil {
		cts = append(cts, *c.PreviousSecret)
	}
	for _, ct := range cts {
		b, err := d.Crypter.Decrypt(ctx, secretBinding(c.MerchantAccountID, c.SubscriptionID), ct)
		if err != nil {
			return secrets{}, err
		}
		s.signing = append(s.signing, string(b))
	}
	if c.BasicAuth != nil {
		b, err := d.Crypter.Decrypt(ctx, basicAuthBinding(c.MerchantAccountID, c.SubscriptionID), *c.BasicAuth)
		if err != nil {
			return secrets{}, err
		}
		var ba coreapi.BasicAuth
		if err := json.Unmarshal(b, &ba); err != nil {
			return secrets{}, err
		}
		s.username, s.password = ba.Username, ba.Password
		s.echoed = echoedCredentials(ba.Username, ba.Password)
	}
	d.mu.Lock()
	d.secrets[c.SubscriptionID] = s
	d.mu.Unlock()
	return s, nil
}

func (d *Dispatcher) deliver(ctx context.Context, c Claim, sec secrets) Outcome {
	at := d.now()
	o := Outcome{DeliveryID: c.DeliveryID, SubscriptionID: c.SubscriptionID, At: at}
	fail := func(msg string) Outcome {
		o.Error = &msg
		if next, ok := d.backoff().Next(c.Attempts+1, c.EventCreatedAt, at); ok && !o.Gone {
			o.Status, o.NextAttemptAt = coreapi.DeliveryPending, &next
		} else {
			o.Status = coreapi.DeliveryFailed
		}
		return o
	}
	sig, err := Sign(sec.signing, c.EventID, at, c.Payload)
	if err != nil {
		return fail("signing failed")
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	start := time.Now()
	m := Message{URL: c.URL, ID: c.EventID, Timestamp: at, Signature: sig, Body: c.Payload,
		Username: sec.username, Password: sec.password}
	o.Request = sentRequest(m)
	a := d.Sender.Send(ctx, m)
	o.Latency = time.Since(start)
	if a.Code != 0 {
		o.ResponseCode = &a.Code
		o.Response = keptResponse(a, sec.echoed)
	}
	switch {
	case o.ResponseCode == nil:
		return fail(a.Error)
	case *o.ResponseCode >= 200 && *o.ResponseCode < 300:
		o.Status = coreapi.DeliverySucceeded
		return o
	case *o.ResponseCode == 410: // Gone
		o.Gone = true
		return fail("410 gone: subscription disabled")
	default:
		return fail("status " + strconv.Itoa(*o.ResponseCode))
	}
}
