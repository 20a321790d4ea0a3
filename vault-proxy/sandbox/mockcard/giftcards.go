package mockcard

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/payorch/shared/apierror"
)

// Gift card redemption (docs/sandbox/mock-card.md, "Gift cards"). A gift
// card is a number and a PIN; its balance starts from the number
// (startingBalance) and lives in memory, lowered by the approved
// redemptions and raised by their refunds. Neither the number nor the PIN
// is kept: balances are keyed by the store's keyed hash of the number.

// Outcomes of a redemption.
const (
	redemptionApproved = "approved"
	redemptionDeclined = "declined"

	declineInsufficientBalance = "insufficient_balance"
	declineInvalidPIN          = "invalid_pin"
)

// InvalidPIN is the sandbox PIN that every gift card refuses.
const InvalidPIN = "0000"

// startingBalance is a sandbox gift card's balance before any redemption,
// by the last four digits of its number.
func startingBalance(number string) int64 {
	switch number[len(number)-4:] {
	case "0000":
		return 0
	case "0100":
		return 100
	case "1000":
		return 1000
	}
	return 10000
}

// giftCardRequest is the gift card part of a redemption or balance
// request: the number and PIN vault-proxy fills in.
type giftCardRequest struct {
	Number string `json:"number"`
	PIN    string `json:"pin"`
}

func (g *giftCardRequest) check(p *problems) {
	if len(g.Number) < 12 || len(g.Number) > 19 || !allIn(g.Number, '0', '9') {
		p.add("/number", "must be 12 to 19 digits", "value_error.gift_card_number")
	}
	if len(g.PIN) < 4 || len(g.PIN) > 12 || !allIn(g.PIN, '0', '9') {
		p.add("/pin", "must be 4 to 12 digits", "value_error.pin")
	}
}

// redemptionRequest is POST /v1/gift-cards/redemptions.
type redemptionRequest struct {
	giftCardRequest
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// CartItems are what the redemption pays for, recorded and answered
	// as sent, as an authorization's.
	CartItems []CartItem `json:"cart_items"`
}

func (r *redemptionRequest) validate() error {
	var p problems
	r.check(&p)
	checkAmount(&p, r.Amount)
	if !allIn(r.Currency, 'A', 'Z') || len(r.Currency) != 3 {
		p.add("/currency", "must be an ISO 4217 code of three capital letters", "value_error.currency")
	}
	checkCartItems(&p, r.CartItems)
	return p.err()
}

// Redemption is one redemption as mock-card keeps it; its JSON is the
// wire shape. It holds no number nor PIN.
type Redemption struct {
	Type             string      `json:"type"` // "gift-card-redemption"
	ID               string      `json:"id"`
	IdempotencyKey   string      `json:"idempotency_key"`
	Status           string      `json:"status"`
	Amount           int64       `json:"amount"`
	Currency         string      `json:"currency"`
	RedeemedAmount   int64       `json:"redeemed_amount"`
	RefundedAmount   int64       `json:"refunded_amount"`
	DeclineCode      *string     `json:"decline_code"`
	ResponseMessage  string      `json:"response_message"`
	RemainingBalance *int64      `json:"remaining_balance"` // after this redemption; null when the PIN was wrong
	Refunds          []Operation `json:"refunds"`
	// CartItems are the request's, as sent (empty when none).
	CartItems []CartItem `json:"cart_items"`
	CreatedAt time.Time  `json:"created_at"`

	card    fingerprint // the number's, whose balance a refund raises
	answers map[string]*stored
}

// GiftCardBalance is POST /v1/gift-cards/balance's answer.
type GiftCardBalance struct {
	Type    string `json:"type"` // "gift-card-balance"
	Balance int64  `json:"balance"`
}

var (
	errRedemptionNotFound = apierror.NotFound("redemption not found")
	errInvalidPIN         = apierror.New(http.StatusUnprocessableEntity, declineInvalidPIN, "the PIN does not match the gift card")
)

// giftStore holds the gift cards' balances and the redemptions, at most
// max redemptions: the oldest is forgotten when a new one comes. The
// balances (one int64 per card used) are not forgotten.
type giftStore struct {
	mu          sync.Mutex
	max         int
	spent       map[fingerprint]int64 // redeemed less refunded, by card
	byKey       map[string]*Redemption
	keyPrint    map[string]fingerprint // the request each key was first sent with
	byID        map[string]*Redemption
	order       []string
	fingerprint func(any) fingerprint
}

func newGiftStore(max int, fp func(any) fingerprint) *giftStore {
	return &giftStore{max: max, spent: map[fingerprint]int64{}, byKey: map[string]*Redemption{},
		keyPrint: map[string]fingerprint{}, byID: map[string]*Redemption{}, fingerprint: fp}
}

// redeem answers a redemption under key: the stored redemption when the
// key has one (replay true), else a new one, decided by the PIN and the
// card's balance now.
func (g *giftStore) redeem(key string, req *redemptionRequest, now time.Time) ([]byte, bool, error) {
	f, card := g.fingerprint(req), g.fingerprint(req.Number)
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.byKey[key]; r != nil {
		if g.keyPrint[key] != f {
			return nil, false, errKeyReused
		}
		b, err := json.Marshal(r)
		return b, true, err
	}
	r := &Redemption{Type: "gift-card-redemption", ID: newID("red_"), IdempotencyKey: key, Status: redemptionDeclined,
		Amount: req.Amount, Currency: req.Currency, Refunds: []Operation{}, CartItems: req.CartItems, CreatedAt: now,
		card: card, answers: map[string]*stored{}}
	if r.CartItems == nil {
		r.CartItems = []CartItem{}
	}
	balance := startingBalance(req.Number) - g.spent[card]
	switch {
	case req.PIN == InvalidPIN:
		r.DeclineCode, r.ResponseMessage = ptr(declineInvalidPIN), "Invalid PIN"
	case req.Amount > balance:
		r.DeclineCode, r.ResponseMessage, r.RemainingBalance = ptr(declineInsufficientBalance), "Insufficient balance", ptr(balance)
	default:
		g.spent[card] += req.Amount
		r.Status, r.RedeemedAmount, r.ResponseMessage, r.RemainingBalance = redemptionApproved, req.Amount, "Approved", ptr(balance-req.Amount)
	}
	g.insert(key, f, r)
	b, err := json.Marshal(r)
	return b, false, err
}

// insert records r under key, forgetting the oldest beyond max.
func (g *giftStore) insert(key string, f fingerprint, r *Redemption) {
	for len(g.order) >= g.max {
		old := g.byKey[g.order[0]]
		delete(g.byID, old.ID)
		delete(g.byKey, g.order[0])
		delete(g.keyPrint, g.order[0])
		g.order = g.order[1:]
	}
	g.order = append(g.order, key)
	g.byKey[key], g.keyPrint[key], g.byID[r.ID] = r, f, r
}

// refund gives back amount (nil: all that is left) of redemption id to
// its card's balance, under key.
func (g *giftStore) refund(id, key string, f fingerprint, amount *int64, now time.Time) ([]byte, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.byID[id]
	if r == nil {
		return nil, false, errRedemptionNotFound
	}
	if st := r.answers[key]; st != nil {
		if st.fingerprint != f {
			return nil, false, errKeyReused
		}
		return st.body, true, nil
	}
	if len(r.answers) >= maxOperations {
		return nil, false, errTooManyOps
	}
	if r.Status != redemptionApproved {
		return nil, false, apierror.New(http.StatusUnprocessableEntity, "redemption_not_refundable", "the redemption was declined: there is nothing to refund")
	}
	n, err := take(amount, r.RedeemedAmount-r.RefundedAmount, "amount_exceeds_redeemed", "refund")
	if err != nil {
		return nil, false, err
	}
	r.RefundedAmount += n
	g.spent[r.card] -= n
	r.Refunds = append(r.Refunds, Operation{ID: newID("ref_"), IdempotencyKey: key, Amount: n, CreatedAt: now})
	b, err := json.Marshal(r)
	if err != nil {
		return nil, false, err
	}
	r.answers[key] = &stored{fingerprint: f, status: http.StatusOK, body: b}
	return b, false, nil
}

// lookup is the redemption made under key, as it is now.
func (g *giftStore) lookup(key string) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.byKey[key]
	if r == nil {
		return nil, apierror.NotFound("no redemption was made with this idempotency key")
	}
	return json.Marshal(r)
}

// balance is a card's balance now, refused for the wrong PIN.
func (g *giftStore) balance(req *giftCardRequest) (GiftCardBalance, error) {
	if req.PIN == InvalidPIN {
		return GiftCardBalance{}, errInvalidPIN
	}
	card := g.fingerprint(req.Number)
	g.mu.Lock()
	defer g.mu.Unlock()
	return GiftCardBalance{Type: "gift-card-balance", Balance: startingBalance(req.Number) - g.spent[card]}, nil
}

// redeem is POST /v1/gift-cards/redemptions: 201 with the redemption,
// approved or declined.
func (s *server) redeem(r *http.Request) (reply, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return reply{}, err
	}
	var req redemptionRequest
	if err := decodeBody(r, &req, false); err != nil {
		return reply{}, err
	}
	if err := req.validate(); err != nil {
		return reply{}, err
	}
	b, replay, err := s.gifts.redeem(key, &req, s.now())
	return reply{status: http.StatusCreated, body: b, replay: replay}, err
}

// lookupRedemption is GET /v1/gift-cards/redemptions?idempotency_key=.
func (s *server) lookupRedemption(r *http.Request) (reply, error) {
	key, err := keyParam(r)
	if err != nil {
		return reply{}, err
	}
	b, err := s.gifts.lookup(key)
	return reply{status: http.StatusOK, body: b}, err
}

// refundRedemption is POST /v1/gift-cards/redemptions/{id}/refunds.
func (s *server) refundRedemption(r *http.Request) (reply, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return reply{}, err
	}
	var req amountRequest
	if err := decodeBody(r, &req, true); err != nil {
		return reply{}, err
	}
	if err := req.validate(); err != nil {
		return reply{}, err
	}
	b, replay, err := s.gifts.refund(r.PathValue("id"), key, s.gifts.fingerprint(req), req.Amount, s.now())
	return reply{status: http.StatusOK, body: b, replay: replay}, err
}

// giftCardBalance is POST /v1/gift-cards/balance: a POST so that the
// number and PIN travel in the body, never in a URL.
func (s *server) giftCardBalance(r *http.Request) (reply, error) {
	var req giftCardRequest
	if err := decodeBody(r, &req, false); err != nil {
		return reply{}, err
	}
	var p problems
	req.check(&p)
	if err := p.err(); err != nil {
		return reply{}, err
	}
	b, err := s.gifts.balance(&req)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, b)
}

// giftRoutes registers the gift card routes.
func (s *server) giftRoutes() {
	s.handle("/v1/gift-cards/redemptions", methods{http.MethodPost: s.redeem, http.MethodGet: s.lookupRedemption})
	s.handle("/v1/gift-cards/redemptions/{id}/refunds", methods{http.MethodPost: s.refundRedemption})
	s.handle("/v1/gift-cards/balance", methods{http.MethodPost: s.giftCardBalance})
}
