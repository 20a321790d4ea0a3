package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
)

// Scopes of the payment method routes. Gift cards are payment methods:
// GET /buyers/gift-cards needs payment-methods.read like every other read.
const (
	scopePaymentMethodsRead  = "payment-methods.read"
	scopePaymentMethodsWrite = "payment-methods.write"
)

// paymentMethods serves /payment-methods, /buyers/payment-methods and
// /buyers/gift-cards.
type paymentMethods struct{ Deps }

// The payment method routes (routes.go registers them):
//
//	POST   /payment-methods            write  {"method":"card"|"gift-card"|"bank","id":"<token>",buyer_id?,buyer_external_identifier?,external_identifier?,
//	                                           bank: scheme,country,currency,account_holder_name,account_type?,routing_number?,sort_code?,bic?,mandate?{recurring}}
//	                                           -> 201 payment method
//	GET    /payment-methods            read   ?buyer_id=&method=&limit=&cursor= -> page envelope (newest first)
//	GET    /payment-methods/{id}       read   -> payment method
//	PUT    /payment-methods/{id}       write  {expiration_date?, scheme_transaction_id?|null, scheme_transaction_id_scheme?|null} -> 200
//	DELETE /payment-methods/{id}       write  -> 204 (mandate revoked, vault shredded, core row deleted)
//	GET    /buyers/payment-methods     read   ?buyer_id=|buyer_external_identifier= -> {"items":[summary]} (most recently used first, max 100)
//	GET    /buyers/gift-cards          read   ?buyer_id=|buyer_external_identifier=&sort_by= -> {"items":[gift card]} (see giftcards.go)
//
// Decisions:
//   - The display data (scheme, label, BIN, card type, expiry, fingerprint)
//     comes from vault-proxy by token (vaultclient.Card), never from the
//     request: a client sending any of it gets 400 unknown field.
//   - A token vault-proxy does not know for this merchant account is 400
//     with a detail on /id (not 404: the route exists; the body is wrong). A
//     token of another kind (a gift card registered as a card) is 400 on
//     /method. The same token twice is 409 duplicate_record.
//   - number, security_code, account_number, iban or pin anywhere at the
//     top level of a POST or PUT body is 400 "card data must be sent
//     through vault-proxy", one detail per field, whatever the value; the
//     body buffer is cleared and nothing is stored.
//   - Unknown buyers (POST body or list query) are 400 with a detail on the
//     parameter used, like any other bad reference in a request.
//   - Bank: the account number / IBAN stays in the vault; core-api stores
//     the label (last 4, from the vault), scheme, country, currency and the
//     non-sensitive details vault-proxy passes on. mandate.recurring sets up
//     a mandate where a debit of the account would go: the merchant
//     account's default payment service for bank, else, outside
//     production, the built-in mock-bank; neither is 422
//     payment_service_unavailable and nothing is stored. It is pending
//     until the bank's notification activates it; its history is GET
//     /mandates/{id}/events (mandates.go).
//   - PUT with an expiration_date updates the vault's expiry first, then
//     the core row, so a forward right after the answer uses the new
//     expiry; updates of one card take turns, and one that fails sets the
//     vault back to core's expiry (paymentmethods.Service.Update). A bank
//     account has no expiry (400). A PUT without one never calls the
//     vault; `{}` changes nothing.
//   - DELETE is retry-safe: mandate revocation is idempotent, a vault
//     not-found counts as shredded.
//   - An {id} that is not a UUID is 400 with a detail at location path
//     (docs/api-conventions.md); a UUID the merchant account does not
//     have is 404.
//
// pmError maps the payment methods service's errors; the mandate's are
// the payment methods' own.
func pmError(err error) error {
	switch {
	case errors.Is(err, coreapi.ErrMandatesUnavailable):
		return apierror.Unprocessable("no connector for bank mandates is configured in this environment",
			strictjson.BodyDetail("/mandate/recurring", "recurring mandates are not available", "value_error.mandate.unavailable"))
	case errors.Is(err, coreapi.ErrMandateDeclined):
		return apierror.Unprocessable("the bank declined the mandate; nothing was stored",
			strictjson.BodyDetail("/mandate/recurring", "mandate declined", "value_error.mandate.declined"))
	}
	return domainError(err, "payment method")
}

// readPaymentMethodBody reads a JSON body and refuses it if it carries card
// or bank account data (zone.SensitiveFields at the top level, whatever their
// value): that data enters only through vault-proxy, and core-api must not
// hold it even for a moment longer than it takes to say no. The buffer is
// cleared either way; nothing of it is logged or echoed.
func readPaymentMethodBody(r *http.Request, dst any) error {
	if err := apierror.CheckJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.ContentLength > MaxBodyBytes || r.Body == nil {
		return DecodeStrict(r, dst) // the same answers: too large, empty
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	defer clear(body)
	if err != nil {
		return apierror.BadRequest("could not read the request body")
	}
	if len(body) > MaxBodyBytes {
		return errTooLarge
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		var details []apierror.Detail
		for _, f := range zone.SensitiveFields {
			if _, ok := top[f]; ok {
				details = append(details, strictjson.BodyDetail("/"+f, "card and bank account data are accepted only by vault-proxy", "value_error.card_data"))
			}
		}
		clear(top)
		if len(details) > 0 {
			return apierror.BadRequest("card data must be sent through vault-proxy", details...)
		}
	}
	return DecodeStrictBytes(body, dst)
}

// vaultProxyError maps a failure of the call to vault-proxy: its own 4xx
// envelope passes through (it never carries card data); anything else is a
// 502 whose cause is logged, not echoed.
func vaultProxyError(err error) error {
	var e *apierror.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apierror.GatewayTimeout("vault-proxy did not answer in time")
	}
	if se := (*vaultclient.StatusError)(nil); errors.As(err, &se) {
		return &upstreamError{apierror.BadGateway("vault-proxy could not complete the request"), err}
	}
	return &upstreamError{apierror.BadGateway("vault-proxy could not be reached"), err}
}

// upstreamError is a 502 whose cause reaches the log line (Error) but
// never the client (the envelope is api's).
type upstreamError struct {
	api   *apierror.Error
	cause error
}

func (e *upstreamError) Error() string   { return e.api.Error() + ": " + e.cause.Error() }
func (e *upstreamError) Unwrap() []error { return []error{e.api, e.cause} }

func (h *paymentMethods) create(w http.ResponseWriter, r *http.Request) error {
	c, err := h.Auth.Authorize(r, scopePaymentMethodsWrite)
	if err != nil {
		return err
	}
	var in coreapi.NewPaymentMethod
	if err := readPaymentMethodBody(r, &in); err != nil {
		return err
	}
	pm, err := h.PaymentMethods.Create(r.Context(), c.MerchantAccountID, in)
	if errors.Is(err, coreapi.ErrBuyerNotFound) {
		return buyerNotFound(&in)
	}
	if err != nil {
		return pmError(err)
	}
	return WriteJSON(w, http.StatusCreated, paymentMethodView(pm))
}

// buyerNotFound is the 400 for a buyer the request names that is not in
// the merchant account, pointing at the field it was named by.
func buyerNotFound(in *coreapi.NewPaymentMethod) error {
	p := "/buyer_id"
	if in.BuyerID == nil {
		p = "/buyer_external_identifier"
	}
	return apierror.BadRequest("invalid request body", strictjson.BodyDetail(p, "no such buyer in this merchant account", "value_error.buyer.not_found"))
}

func (h *paymentMethods) get(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.Auth.AuthorizeTarget(r, scopePaymentMethodsRead, "id")
	if err != nil {
		return err
	}
	pm, err := h.PaymentMethods.Get(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return pmError(err)
	}
	return WriteJSON(w, http.StatusOK, paymentMethodView(pm))
}

func (h *paymentMethods) list(w http.ResponseWriter, r *http.Request) error {
	c, err := h.Auth.Authorize(r, scopePaymentMethodsRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var f coreapi.PaymentMethodFilter
	var details []apierror.Detail
	if v := q.Get("buyer_id"); v != "" {
		if !coreapi.IsUUID(v) {
			details = append(details, queryDetail("buyer_id", "must be a buyer id (a lower-case UUID)", "value_error.uuid"))
		}
		f.BuyerID = v
	}
	if v := q.Get("method"); v != "" {
		if v != coreapi.MethodCard && v != coreapi.MethodGiftCard && v != coreapi.MethodBank {
			details = append(details, queryDetail("method", "must be one of card, gift-card, bank", "value_error.const"))
		}
		f.Method = v
	}
	if len(details) > 0 {
		return apierror.BadRequest("invalid query", details...)
	}
	page, err := h.Cursors.ParseRequest(q, "payment-methods", pagination.Binding(c.MerchantAccountID, f.BuyerID, f.Method))
	if err != nil {
		return err
	}
	rows, err := h.PaymentMethods.List(r.Context(), c.MerchantAccountID, f, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(pm coreapi.PaymentMethod) pagination.Key {
		return pagination.Key{Time: pm.CreatedAt, ID: pm.ID}
	})
	return WriteJSON(w, http.StatusOK, pageOf(env, paymentMethodView))
}

func (h *paymentMethods) update(w http.ResponseWriter, r *http.Request) error {
	c, err := h.Auth.Authorize(r, scopePaymentMethodsWrite)
	if err != nil {
		return err
	}
	// The body first: card data in it is refused (and its buffer cleared)
	// whatever else is wrong with the request.
	var u coreapi.PaymentMethodUpdate
	if err := readPaymentMethodBody(r, &u); err != nil {
		return err
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		return err
	}
	pm, err := h.PaymentMethods.Update(r.Context(), c.MerchantAccountID, callerActor(c), id, u)
	if err != nil {
		return pmError(err)
	}
	return WriteJSON(w, http.StatusOK, paymentMethodView(pm))
}

// delete removes a payment method (paymentmethods.Service.Delete): retried
// after a partial failure, it finishes the job.
func (h *paymentMethods) delete(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.Auth.AuthorizeTarget(r, scopePaymentMethodsWrite, "id")
	if err != nil {
		return err
	}
	if err := h.PaymentMethods.Delete(r.Context(), c.MerchantAccountID, callerActor(c), id); err != nil {
		return pmError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// buyerQuery reads ?buyer_id= / ?buyer_external_identifier= (one is
// required; both must then name the same buyer).
func buyerQuery(r *http.Request) (id, ext string, err error) {
	q := r.URL.Query()
	id = q.Get("buyer_id")
	if ext, err = textParam(q, "buyer_external_identifier"); err != nil {
		return "", "", err
	}
	switch {
	case id == "" && ext == "":
		return "", "", apierror.BadRequest("invalid query", queryDetail("buyer_id", "buyer_id or buyer_external_identifier is required", "value_error.missing"))
	case id != "" && !coreapi.IsUUID(id):
		return "", "", apierror.BadRequest("invalid query", queryDetail("buyer_id", "must be a buyer id (a lower-case UUID)", "value_error.uuid"))
	}
	return id, ext, nil
}

// buyerQueryError is the 400 for a buyer the query names that is not in
// the merchant account, pointing at the parameter it was named by (id: the
// buyer_id given); other errors pass.
func buyerQueryError(id string, err error) error {
	if !errors.Is(err, coreapi.ErrBuyerNotFound) {
		return err
	}
	p := "buyer_id"
	if id == "" {
		p = "buyer_external_identifier"
	}
	return apierror.BadRequest("invalid query", queryDetail(p, "no such buyer in this merchant account", "value_error.buyer.not_found"))
}

func queryDetail(param, msg, typ string) apierror.Detail {
	return apierror.Detail{Location: apierror.LocationQuery, Pointer: param, Message: msg, Type: typ}
}

func (h *paymentMethods) buyerPaymentMethods(w http.ResponseWriter, r *http.Request) error {
	c, err := h.Auth.Authorize(r, scopePaymentMethodsRead)
	if err != nil {
		return err
	}
	id, ext, err := buyerQuery(r)
	if err != nil {
		return err
	}
	rows, err := h.PaymentMethods.BuyerPaymentMethods(r.Context(), c.MerchantAccountID, id, ext)
	if err != nil {
		return buyerQueryError(id, err)
	}
	items := make([]paymentMethodSummaryJSON, len(rows))
	for i := range rows {
		items[i] = paymentMethodSummary(&rows[i])
	}
	return WriteJSON(w, http.StatusOK, map[string]any{"items": items})
}

func callerActor(c Caller) string {
	if c.Principal == nil {
		return ""
	}
	return "token:" + c.Principal.TokenID
}

// --- wire shapes (the PaymentMethod schema of openapi.json) ---

type buyerRefJSON struct {
	ID                 string  `json:"id"`
	ExternalIdentifier *string `json:"external_identifier"`
}

type mandateJSON struct {
	Type           string `json:"type"`
	ID             string `json:"id"`
	Status         string `json:"status"`
	PaymentService string `json:"payment_service"`
	// PaymentServiceID: the payment service it was set up through, which
	// merchant-initiated charges go to; null: the built-in connector.
	PaymentServiceID *string `json:"payment_service_id"`
	CreatedAt        string  `json:"created_at"`
	RevokedAt        *string `json:"revoked_at"`
	// RecurringTokenAt: when the processor's recurring token arrived;
	// merchant-initiated charges need it (docs/transactions.md).
	RecurringTokenAt *string `json:"recurring_token_at"`
}

type paymentMethodJSON struct {
	Type                      string         `json:"type"`
	ID                        string         `json:"id"`
	MerchantAccountID         string         `json:"merchant_account_id"`
	Method                    string         `json:"method"`
	Status                    string         `json:"status"`
	Scheme                    string         `json:"scheme"`
	Label                     string         `json:"label"`
	Details                   map[string]any `json:"details"`
	ExpirationDate            *string        `json:"expiration_date"`
	Fingerprint               *string        `json:"fingerprint"`
	Country                   *string        `json:"country"`
	Currency                  *string        `json:"currency"`
	Mandate                   *mandateJSON   `json:"mandate"`
	Buyer                     *buyerRefJSON  `json:"buyer"`
	ExternalIdentifier        *string        `json:"external_identifier"`
	SchemeTransactionID       *string        `json:"scheme_transaction_id"`
	SchemeTransactionIDScheme *string        `json:"scheme_transaction_id_scheme"`
	Stored                    bool           `json:"stored"`
	usageJSON
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

type usageJSON struct {
	LastUsedAt    *string `json:"last_used_at"`
	UsageCount    int64   `json:"usage_count"`
	CITLastUsedAt *string `json:"cit_last_used_at"`
	CITUsageCount int64   `json:"cit_usage_count"`
}

func timePtrJSON(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func usageView(u coreapi.Usage) usageJSON {
	return usageJSON{LastUsedAt: timePtrJSON(u.LastUsedAt), UsageCount: u.UsageCount,
		CITLastUsedAt: timePtrJSON(u.CITLastUsedAt), CITUsageCount: u.CITUsageCount}
}

func paymentMethodView(pm *coreapi.PaymentMethod) paymentMethodJSON {
	v := paymentMethodJSON{
		Type: "payment-method", ID: pm.ID, MerchantAccountID: pm.MerchantAccountID, Method: pm.Method, Status: pm.Status,
		Scheme: pm.Scheme, Label: pm.Label, ExpirationDate: orNull(pm.ExpirationDate), Fingerprint: orNull(pm.Fingerprint),
		Country: orNull(pm.Country), Currency: orNull(pm.Currency), ExternalIdentifier: pm.ExternalIdentifier,
		SchemeTransactionID: pm.SchemeTransactionID, SchemeTransactionIDScheme: pm.SchemeTransactionIDScheme, Stored: !pm.SinglePayment,
		usageJSON: usageView(pm.Usage), CreatedAt: timestamp(pm.CreatedAt), UpdatedAt: timestamp(pm.UpdatedAt),
	}
	if pm.Bank != nil {
		v.Details = map[string]any{
			"account_holder_name": pm.Bank.AccountHolderName, "account_type": orNull(pm.Bank.AccountType),
			"routing_number": orNull(pm.Bank.RoutingNumber), "sort_code": orNull(pm.Bank.SortCode), "bic": orNull(pm.Bank.BIC),
		}
	} else {
		v.Details = map[string]any{"bin": orNull(pm.BIN), "card_type": orNull(pm.CardType)}
	}
	if pm.BuyerID != "" {
		v.Buyer = &buyerRefJSON{ID: pm.BuyerID, ExternalIdentifier: orNull(pm.BuyerExternalIdentifier)}
	}
	if m := pm.Mandate; m != nil {
		out := mandateOut(m)
		v.Mandate = &out
	}
	return v
}

// paymentMethodSummaryJSON is an item of GET /buyers/payment-methods.
type paymentMethodSummaryJSON struct {
	Type              string  `json:"type"`
	ID                string  `json:"id"`
	MerchantAccountID string  `json:"merchant_account_id"`
	Method            string  `json:"method"`
	Scheme            string  `json:"scheme"`
	Label             string  `json:"label"`
	ExpirationDate    *string `json:"expiration_date"`
	Country           *string `json:"country"`
	Currency          *string `json:"currency"`
	usageJSON
	CreatedAt string `json:"created_at"`
}

func paymentMethodSummary(pm *coreapi.PaymentMethod) paymentMethodSummaryJSON {
	return paymentMethodSummaryJSON{Type: "payment-method", ID: pm.ID, MerchantAccountID: pm.MerchantAccountID, Method: pm.Method,
		Scheme: pm.Scheme, Label: pm.Label, ExpirationDate: orNull(pm.ExpirationDate), Country: orNull(pm.Country),
		Currency: orNull(pm.Currency), usageJSON: usageView(pm.Usage), CreatedAt: timestamp(pm.CreatedAt)}
}
