package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/strictjson"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// Scopes of the checkout session routes.
const (
	ScopeCheckoutSessionsRead  = "checkout-sessions.read"
	ScopeCheckoutSessionsWrite = "checkout-sessions.write"
)

// CheckoutStore keeps checkout sessions and each merchant account's
// allowed origins (postgres.DB).
type CheckoutStore interface {
	InsertCheckoutSession(ctx context.Context, s *vaultproxy.CheckoutSession) error
	CheckoutSession(ctx context.Context, id uuid.UUID) (*vaultproxy.CheckoutSession, error)
	CountCheckoutFieldAttempt(ctx context.Context, id uuid.UUID) (*vaultproxy.CheckoutSession, error)
	SetCheckoutSessionCard(ctx context.Context, id, token uuid.UUID, kind string, now time.Time) (uuid.UUID, string, error)
	ClaimCheckoutSession(ctx context.Context, merchantAccountID string, id uuid.UUID, key string, now time.Time) (*vaultproxy.CheckoutSession, bool, error)
	ReleaseCheckoutSession(ctx context.Context, id uuid.UUID, key string) error
	CheckoutOrigins(ctx context.Context, merchantAccountID string) ([]string, error)
	SetCheckoutOrigins(ctx context.Context, merchantAccountID string, origins []string, now time.Time) error
}

// Checkout serves /checkout/sessions, the fields endpoint the secure card
// fields' iframes post to, and /checkout/settings (the allowed origins).
// Payments with a session are Cards.CreateTransaction's.
type Checkout struct {
	Store CheckoutStore
	Cards *Cards
	Auth  *Authenticator
	Now   func() time.Time
}

func (h *Checkout) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

type checkoutSessionInput struct {
	Amount    *int64            `json:"amount"`
	Currency  *string           `json:"currency"`
	CartItems []json.RawMessage `json:"cart_items"`
	Metadata  map[string]string `json:"metadata"`
}

type checkoutCardJSON struct {
	Method         string `json:"method"`
	Scheme         string `json:"scheme,omitempty"`
	Label          string `json:"label,omitempty"`
	BIN            string `json:"bin,omitempty"`
	ExpirationDate string `json:"expiration_date,omitempty"`
}

type checkoutSessionJSON struct {
	Type              string            `json:"type"`
	ID                string            `json:"id"`
	MerchantAccountID string            `json:"merchant_account_id"`
	Status            string            `json:"status"`
	Amount            *int64            `json:"amount"`
	Currency          *string           `json:"currency"`
	CartItems         json.RawMessage   `json:"cart_items"`
	Metadata          json.RawMessage   `json:"metadata"`
	PaymentMethod     *checkoutCardJSON `json:"payment_method"`
	ExpiresAt         string            `json:"expires_at"`
	CreatedAt         string            `json:"created_at"`
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

const (
	maxCartItems    = 249
	maxMetadataKeys = 20
)

// Create serves POST /checkout/sessions.
func (h *Checkout) Create(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, ScopeCheckoutSessionsWrite)
	if err != nil {
		return err
	}
	var in checkoutSessionInput
	if len(ctx.Request.Body()) > 0 { // every field is optional: no body is an empty one
		if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
			return err
		}
		if err := decodeInternal(ctx, &in); err != nil {
			return err
		}
	}
	var details []apierror.Detail
	if in.Amount != nil && (*in.Amount < 0 || *in.Amount > 99999999) {
		details = append(details, strictjson.BodyDetail("/amount", "must be between 0 and 99999999", "value_error.number.range"))
	}
	if in.Currency != nil && !currencyCode.MatchString(*in.Currency) {
		details = append(details, strictjson.BodyDetail("/currency", "must be an ISO 4217 code", "value_error.currency"))
	}
	if len(in.CartItems) > maxCartItems {
		details = append(details, strictjson.BodyDetail("/cart_items", fmt.Sprintf("at most %d items", maxCartItems), "value_error.list.max_items"))
	}
	for i, item := range in.CartItems {
		if gjson.ParseBytes(item).Type != gjson.JSON || !gjson.ParseBytes(item).IsObject() {
			details = append(details, strictjson.BodyDetail(fmt.Sprintf("/cart_items/%d", i), "must be an object", "type_error.object"))
		}
	}
	if len(in.Metadata) > maxMetadataKeys {
		details = append(details, strictjson.BodyDetail("/metadata", fmt.Sprintf("at most %d keys", maxMetadataKeys), "value_error.dict.max_items"))
	}
	if len(details) > 0 {
		return apierror.BadRequest("invalid checkout session", details...)
	}
	now := h.now().UTC().Truncate(time.Microsecond)
	s := &vaultproxy.CheckoutSession{ID: uuid.New(), MerchantAccountID: c.MerchantAccountID, Amount: in.Amount, Currency: in.Currency,
		ExpiresAt: now.Add(vaultproxy.CheckoutSessionTTL), CreatedAt: now}
	if in.CartItems != nil {
		s.CartItems, _ = json.Marshal(in.CartItems)
	}
	if in.Metadata != nil {
		s.Metadata, _ = json.Marshal(in.Metadata)
	}
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	if err := h.Store.InsertCheckoutSession(rctx, s); err != nil {
		return err
	}
	return WriteJSON(ctx, fasthttp.StatusCreated, h.out(rctx, s))
}

// Get serves GET /checkout/sessions/{id}: a session of another merchant
// account is not found.
func (h *Checkout) Get(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, ScopeCheckoutSessionsRead)
	if err != nil {
		return err
	}
	id, err := uuidParam(ctx, "id", "checkout session")
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	s, err := h.Store.CheckoutSession(rctx, id)
	if err == nil && s.MerchantAccountID != c.MerchantAccountID {
		err = vaultproxy.ErrNotFound
	}
	if err != nil {
		return checkoutError(err)
	}
	return WriteJSON(ctx, fasthttp.StatusOK, h.out(rctx, s))
}

// out is the session as the API shows it: its card by display data only.
func (h *Checkout) out(ctx context.Context, s *vaultproxy.CheckoutSession) checkoutSessionJSON {
	j := checkoutSessionJSON{Type: "checkout-session", ID: s.ID.String(), MerchantAccountID: s.MerchantAccountID,
		Status: s.Status(h.now()), Amount: s.Amount, Currency: s.Currency, CartItems: s.CartItems, Metadata: s.Metadata,
		ExpiresAt: s.ExpiresAt.UTC().Format(time.RFC3339), CreatedAt: s.CreatedAt.UTC().Format(time.RFC3339)}
	if s.PaymentMethodID != uuid.Nil {
		j.PaymentMethod = h.card(ctx, s.MerchantAccountID, s.PaymentMethodID)
	}
	return j
}

// card is the display data of the merchant account's card token; only
// its method when the vault cannot tell (the card was deleted since).
func (h *Checkout) card(ctx context.Context, merchant string, token uuid.UUID) *checkoutCardJSON {
	out := &checkoutCardJSON{Method: "card"}
	vc, err := h.Cards.Vaulting.Metadata(ctx, vaulting.Caller{MerchantAccountID: merchant, Actor: "checkout-session"}, token)
	if err == nil {
		out.Scheme, out.Label, out.BIN, out.ExpirationDate = vc.Scheme, vc.Last4, vc.BIN, vc.ExpirationDate
	}
	return out
}

// checkoutError maps the store's refusals to the envelope, each with its
// own code so the fields can tell the buyer what happened.
func checkoutError(err error) error {
	switch {
	case errors.Is(err, vaultproxy.ErrNotFound):
		return apierror.NotFound("checkout session not found")
	case errors.Is(err, vaultproxy.ErrCheckoutSessionExpired):
		return apierror.New(fasthttp.StatusUnprocessableEntity, "checkout_session_expired",
			"the checkout session has expired; create a new one")
	case errors.Is(err, vaultproxy.ErrCheckoutSessionUsed):
		return apierror.New(fasthttp.StatusUnprocessableEntity, "checkout_session_used",
			"the checkout session was used by a payment already; create a new one")
	case errors.Is(err, vaultproxy.ErrCheckoutSessionIncomplete):
		return apierror.New(fasthttp.StatusUnprocessableEntity, "checkout_session_incomplete",
			"no card was sent with the checkout session")
	}
	return err
}

// --- the fields endpoint (no credential but the session id) ---

type checkoutFieldsInput struct {
	PaymentMethod *checkoutFieldsCard `json:"payment_method"`
}

type checkoutFieldsCard struct {
	Method         *string `json:"method"`
	Number         *string `json:"number"`
	ExpirationDate *string `json:"expiration_date"`
	SecurityCode   *string `json:"security_code"`
	ID             *string `json:"id"`
}

var checkoutFieldsSchema = strictjson.For[checkoutFieldsInput]()

// Fields serves PUT /checkout/sessions/{id}/fields: the card the secure
// fields send, vaulted as POST /payment-methods vaults one (its security
// code held in memory only), or a stored card of the session's merchant
// account with its security code. The session id is the only credential:
// it must name a session that is neither expired nor used, and each
// session takes at most vaultproxy.MaxCheckoutFieldAttempts submissions.
// Sending again replaces the session's card (a card vaulted with an
// earlier submission is shredded).
func (h *Checkout) Fields(ctx *fasthttp.RequestCtx) error {
	body := ctx.Request.Body()
	defer clear(body)
	id, err := uuidParam(ctx, "id", "checkout session")
	if err != nil {
		return err
	}
	if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, time.Minute)
	defer cancel()
	now := h.now()
	s, err := h.Store.CountCheckoutFieldAttempt(rctx, id)
	if err != nil {
		return checkoutError(err)
	}
	switch {
	case s.UsedAt != nil:
		return checkoutError(vaultproxy.ErrCheckoutSessionUsed)
	case s.Expired(now):
		return checkoutError(vaultproxy.ErrCheckoutSessionExpired)
	case s.FieldAttempts > vaultproxy.MaxCheckoutFieldAttempts:
		return apierror.TooManyRequests(fmt.Sprintf("a checkout session takes at most %d card submissions; create a new one", vaultproxy.MaxCheckoutFieldAttempts))
	}
	if _, err := strictObjectInPlace(body, checkoutFieldsSchema); err != nil {
		return err
	}
	pm := parseView(body).Get("payment_method")
	doc := map[string]gjson.Result{}
	pm.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Null {
			doc[k.Str] = v
		}
		return true
	})
	caller := vaulting.Caller{MerchantAccountID: s.MerchantAccountID, Actor: "checkout-session:" + logging.MaskID(s.ID.String()), RequestID: RequestID(ctx)}
	var token uuid.UUID
	kind := doc["method"].Str
	switch kind {
	case vaultproxy.CheckoutCardVaulted:
		if _, ok := doc["id"]; ok {
			return apierror.BadRequest("invalid request body", strictjson.BodyDetail("/payment_method/id", "a card given in full takes no id", "value_error.extra"))
		}
		rec, err := h.Cards.vaultCard(ctx, caller, vaultproxy.KindCard, doc, uuid.Nil)
		if err != nil {
			return vaultingErrorAt(err, paymentMethodPointer)
		}
		token = rec.Token
	case vaultproxy.CheckoutCardStored:
		if token, err = h.storedCard(rctx, caller, doc); err != nil {
			return err
		}
	default:
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail("/payment_method/method",
			`must be "card" or "id"`, "value_error.payment_method"))
	}
	prev, prevKind, err := h.Store.SetCheckoutSessionCard(rctx, id, token, kind, now)
	if err != nil {
		h.letGo(caller, token, kind)
		return checkoutError(err)
	}
	if prev != uuid.Nil && prev != token {
		h.letGo(caller, prev, prevKind)
	}
	s.PaymentMethodID = token
	return WriteJSON(ctx, fasthttp.StatusOK, checkoutFieldsJSON{Type: "checkout-session", ID: s.ID.String(),
		ExpiresAt: s.ExpiresAt.UTC().Format(time.RFC3339), PaymentMethod: h.card(rctx, s.MerchantAccountID, token)})
}

// checkoutFieldsJSON answers the fields: what the iframe may pass to the
// merchant's page, nothing of the merchant's order.
type checkoutFieldsJSON struct {
	Type          string            `json:"type"`
	ID            string            `json:"id"`
	ExpiresAt     string            `json:"expires_at"`
	PaymentMethod *checkoutCardJSON `json:"payment_method"`
}

// storedCard checks the stored card doc names (method "id") belongs to the
// caller's merchant account and holds its security code for the payment.
func (h *Checkout) storedCard(ctx context.Context, caller vaulting.Caller, doc map[string]gjson.Result) (uuid.UUID, error) {
	var details []apierror.Detail
	for _, f := range []string{"number", "expiration_date"} {
		if _, ok := doc[f]; ok {
			details = append(details, strictjson.BodyDetail("/payment_method/"+f, "a stored card takes only its id and security code", "value_error.extra"))
		}
	}
	code := doc["security_code"].Str
	if code == "" {
		details = append(details, strictjson.BodyDetail("/payment_method/security_code", "field required", "value_error.missing"))
	} else if !allDigits(code) || len(code) < 3 || len(code) > 4 {
		details = append(details, strictjson.BodyDetail("/payment_method/security_code", "must be 3 or 4 digits", "value_error.card.security_code"))
	}
	token, err := uuid.Parse(doc["id"].Str)
	if err != nil {
		details = append(details, strictjson.BodyDetail("/payment_method/id", "must be a payment method id", "value_error.uuid"))
	}
	if len(details) > 0 {
		return uuid.Nil, apierror.BadRequest("the payment method is not valid", details...)
	}
	vc, err := h.Cards.Vaulting.Metadata(ctx, caller, token)
	if err != nil {
		return uuid.Nil, vaultingErrorAt(err, paymentMethodPointer)
	}
	if vc.Kind != vaultproxy.KindCard {
		return uuid.Nil, apierror.NotFound("payment method not found")
	}
	h.Cards.Vaulting.HoldSecurityCode(token, []byte(code))
	return token, nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// letGo ends what a session held for a card it no longer names: its
// security code, and a card vaulted with the fields, which nothing else
// uses (no payment method was created for it yet).
func (h *Checkout) letGo(caller vaulting.Caller, token uuid.UUID, kind string) {
	h.Cards.Vaulting.ForgetSecurityCode(token)
	if kind == vaultproxy.CheckoutCardVaulted {
		h.Cards.rollback(caller, token)
	}
}

// --- the allowed origins ---

type checkoutSettingsInput struct {
	AllowedOrigins []string `json:"allowed_origins"`
}

type checkoutSettingsJSON struct {
	Type              string   `json:"type"`
	MerchantAccountID string   `json:"merchant_account_id"`
	AllowedOrigins    []string `json:"allowed_origins"`
}

const maxAllowedOrigins = 20

// GetSettings serves GET /checkout/settings.
func (h *Checkout) GetSettings(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, ScopeCheckoutSessionsRead)
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	origins, err := h.Store.CheckoutOrigins(rctx, c.MerchantAccountID)
	if err != nil {
		return err
	}
	return WriteJSON(ctx, fasthttp.StatusOK, checkoutSettingsJSON{Type: "checkout-settings", MerchantAccountID: c.MerchantAccountID, AllowedOrigins: origins})
}

// PutSettings serves PUT /checkout/settings: the origins (scheme, host and
// port, nothing else) whose pages may embed the secure fields.
func (h *Checkout) PutSettings(ctx *fasthttp.RequestCtx) error {
	c, err := h.Auth.Authorize(ctx, ScopeCheckoutSessionsWrite)
	if err != nil {
		return err
	}
	if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
		return err
	}
	var in checkoutSettingsInput
	if err := decodeInternal(ctx, &in); err != nil {
		return err
	}
	if in.AllowedOrigins == nil {
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail("/allowed_origins", "field required", "value_error.missing"))
	}
	var details []apierror.Detail
	if len(in.AllowedOrigins) > maxAllowedOrigins {
		details = append(details, strictjson.BodyDetail("/allowed_origins", fmt.Sprintf("at most %d origins", maxAllowedOrigins), "value_error.list.max_items"))
	}
	origins := make([]string, 0, len(in.AllowedOrigins))
	for i, o := range in.AllowedOrigins {
		norm, ok := NormalizeOrigin(o)
		if !ok {
			details = append(details, strictjson.BodyDetail(fmt.Sprintf("/allowed_origins/%d", i),
				"must be an origin: https://host[:port] (http only for localhost or 127.0.0.1), without path, query or wildcard", "value_error.origin"))
			continue
		}
		origins = append(origins, norm)
	}
	if len(details) > 0 {
		return apierror.BadRequest("invalid allowed origins", details...)
	}
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	if err := h.Store.SetCheckoutOrigins(rctx, c.MerchantAccountID, origins, h.now()); err != nil {
		return err
	}
	return WriteJSON(ctx, fasthttp.StatusOK, checkoutSettingsJSON{Type: "checkout-settings", MerchantAccountID: c.MerchantAccountID, AllowedOrigins: origins})
}

// NormalizeOrigin is o as a browser serializes an origin (lower-case
// scheme and host, no default port), ok false when o is not one: it goes
// into a Content-Security-Policy and is compared with postMessage origins,
// so nothing but scheme, host and port may be in it.
func NormalizeOrigin(o string) (string, bool) {
	u, err := url.Parse(o)
	if err != nil || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") ||
		u.Host == "" || strings.ContainsAny(u.Host, "*;, '\"") {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	switch scheme {
	case "https":
	case "http":
		if host != "localhost" && host != "127.0.0.1" && host != "::1" {
			return "", false
		}
	default:
		return "", false
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, true
	}
	return scheme + "://" + host, true
}

// uuidParam reads a checkout session's id from the path. The fields
// route is authenticated by that id alone and answers 404 for any id it
// does not know; one that is not a UUID is answered the same, there and
// on the session's GET (docs/secure-fields.md).
func uuidParam(ctx *fasthttp.RequestCtx, name, what string) (uuid.UUID, error) {
	s, _ := ctx.UserValue(name).(string)
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.Nil, apierror.NotFound(what + " not found")
	}
	return id, nil
}
