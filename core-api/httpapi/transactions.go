package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
)

// Scopes of the transaction routes.
const (
	ScopeTransactionsRead  = "transactions.read"
	ScopeTransactionsWrite = "transactions.write"
)

// The transaction routes (routes.go registers them):
//
//	POST /transactions  write, Idempotency-Key  {amount,currency,country?,intent?,payment_method:{method:"id",id}|{method:"pix"}
//	                                             |{method:"paypal"} with integration_client (direct.go)
//	                                             |{method:"gcash"} with redirect_url,approval_expires_at? (redirect.go),buyer_id?,
//	                                             external_identifier?,metadata?,payment_source?,merchant_initiated?,
//	                                             is_subsequent_payment?,installment_count?,cart_items?} -> 201 transaction
//	GET  /transactions  read  ?status=(repeatable)&created_at_gte=&created_at_lte=&amount_gte=&amount_lte=&buyer_id=
//	                          &external_identifier=&payment_method_id=&payment_service_id=&limit=&cursor= -> page (newest first)
//	GET  /transactions/{transaction_id}         read  -> transaction
//	GET  /transactions/{transaction_id}/events  read  ?limit=&cursor= -> page of events (newest first)
//	POST /transactions/{transaction_id}/capture  write, Idempotency-Key  {amount?} or no body -> 200 transaction
//	POST /transactions/{transaction_id}/void     write, Idempotency-Key  {} or no body -> 200 transaction
//	POST /transactions/{transaction_id}/refunds  write, Idempotency-Key  {amount?,reason?,external_identifier?} or no body -> 201 refund
//
// Decisions:
//   - A payment is by a stored card ({"method":"id"}), through the
//     connector of its payment service: the one payment_service_id names,
//     else the merchant account's default for cards, else (outside
//     production) the built-in sandbox mock-card; one it cannot use is 422
//     with the payment service's code at /payment_service_id
//     (docs/payment-services.md). A card given in full is vaulted by
//     vault-proxy, which sends the payment on this way with
//     zone.SecurityCodeHeldHeader naming the card when it holds its
//     security code (a hint the service confirms with vault-proxy).
//   - A pix payment ({"method":"pix"}) is a sale by QR code through a
//     QR connector, routed the same way (the built-in sandbox one is
//     mock-bank): 201 capture_pending with qr_code and
//     approval_expires_at; the processor's notification captures it
//     (webhooks.go), the sweep fails it once expired unpaid.
//   - A stored bank account ({"method":"id"} naming a bank payment
//     method) is a sale by bank debit through the environment's bank
//     connector: 201 capture_pending, settled by the bank's notification.
//     A merchant-initiated one whose mandate cannot be charged is 422
//     mandate_required, mandate_not_ready or mandate_revoked, nothing
//     stored or sent (docs/transactions.md, "Bank debits").
//   - The connector's answer is the transaction's status, never the HTTP
//     status: a decline is 201 authorization_declined with the
//     processor's codes, an unknown outcome 201 processing. Only a call
//     the connector could not send is an error (502; the transaction is
//     authorization_failed).
//   - A refused capture, void or refund changes nothing: 422 with the
//     state machine's code (transaction_not_capturable,
//     refund_exceeds_captured, ...), or 409 concurrent_request while an
//     operation in flight may still change the answer
//     (docs/transactions.md). As with the authorization, a capture's or
//     refund's decline is in the answer (the transaction's amounts, the
//     refund's status), not the HTTP status.
type transactionHandlers struct{ d Deps }

// transactionCreateJSON is the body of POST /transactions. amount,
// currency and payment_method are pointers so that their absence is
// told apart from a zero.
type transactionCreateJSON struct {
	Amount               *int64                     `json:"amount"`
	Currency             *string                    `json:"currency"`
	Country              *string                    `json:"country"`
	Intent               string                     `json:"intent"`
	PaymentMethod        *paymentMethodRefJSON      `json:"payment_method"`
	BuyerID              *string                    `json:"buyer_id"`
	BuyerExternalID      *string                    `json:"buyer_external_identifier"`
	PaymentServiceID     *string                    `json:"payment_service_id"`
	Store                bool                       `json:"store"`
	PreviousSchemeTxID   *string                    `json:"previous_scheme_transaction_id"`
	ConnectionOptions    map[string]json.RawMessage `json:"connection_options"`
	ExternalIdentifier   *string                    `json:"external_identifier"`
	Metadata             map[string]string          `json:"metadata"`
	PaymentSource        string                     `json:"payment_source"`
	MerchantInitiated    bool                       `json:"merchant_initiated"`
	IsSubsequentPayment  bool                       `json:"is_subsequent_payment"`
	InstallmentCount     *int32                     `json:"installment_count"`
	CartItems            []coreapi.CartItem         `json:"cart_items"`
	IntegrationClient    *string                    `json:"integration_client"`
	ThreeDSecure         *threeDSecureRequestJSON   `json:"three_d_secure"`
	AntiFraudFingerprint *string                    `json:"anti_fraud_fingerprint"`
	RedirectURL          *string                    `json:"redirect_url"`
	ApprovalExpiresAt    *string                    `json:"approval_expires_at"`
}

// paymentMethodRefJSON names a stored payment method: {"method":"id","id":...}.
type paymentMethodRefJSON struct {
	Method string `json:"method"`
	ID     string `json:"id"`
}

// newTransaction is the request as the domain takes it; missing required
// fields are reported here, every other rule by NewTransaction.Validate.
func (in transactionCreateJSON) newTransaction() (coreapi.NewTransaction, error) {
	var missing []apierror.Detail
	need := func(ok bool, p string) {
		if !ok {
			missing = append(missing, strictjson.BodyDetail(p, "is required", strictjson.TypeMissing))
		}
	}
	need(in.Amount != nil, "/amount")
	need(in.Currency != nil, "/currency")
	need(in.PaymentMethod != nil, "/payment_method")
	pm := in.PaymentMethod
	direct := pm != nil && (slices.Contains(coreapi.DirectMethods, pm.Method) || slices.Contains(coreapi.RedirectMethods, pm.Method))
	switch {
	case pm == nil:
	case (pm.Method == coreapi.MethodPix || direct) && pm.ID != "":
		missing = append(missing, strictjson.BodyDetail("/payment_method/id", "a "+pm.Method+" payment has no stored payment method", "value_error.payment_method."+pm.Method))
	case pm.Method != "id" && pm.Method != coreapi.MethodPix && !direct:
		missing = append(missing, strictjson.BodyDetail("/payment_method/method",
			`must be "id" (a stored payment method), "pix" (an instant bank transfer by QR code), "paypal" (a direct integration) or "gcash" (a redirect payment); a card given with the payment is accepted only by vault-proxy`, "value_error.const"))
	}
	expires, bad := approvalExpiresAt(in.ApprovalExpiresAt)
	missing = append(missing, bad...)
	if in.ThreeDSecure != nil && pm != nil && (pm.Method == coreapi.MethodPix || direct) {
		missing = append(missing, strictjson.BodyDetail("/three_d_secure", "3-D Secure applies to card payments only", "value_error.three_d_secure"))
	}
	if len(missing) > 0 {
		return coreapi.NewTransaction{}, apierror.BadRequest("invalid request body", missing...)
	}
	n := coreapi.NewTransaction{
		Intent: in.Intent, Amount: *in.Amount, Currency: *in.Currency, Country: in.Country,
		IntegrationClient: in.IntegrationClient, BuyerID: in.BuyerID, BuyerExternalIdentifier: in.BuyerExternalID,
		PaymentServiceID: in.PaymentServiceID, Store: in.Store, PreviousSchemeTransactionID: in.PreviousSchemeTxID,
		ConnectionOptions: in.ConnectionOptions, RedirectURL: in.RedirectURL, ApprovalExpiresAt: expires,
		TransactionDetails: coreapi.TransactionDetails{
			PaymentSource: in.PaymentSource, MerchantInitiated: in.MerchantInitiated, IsSubsequentPayment: in.IsSubsequentPayment,
			InstallmentCount: in.InstallmentCount, CartItems: in.CartItems, ExternalIdentifier: in.ExternalIdentifier, Metadata: in.Metadata,
		},
	}
	if in.ThreeDSecure != nil {
		n.ThreeDSecure = in.ThreeDSecure.domain()
	}
	n.AntiFraudFingerprint = in.AntiFraudFingerprint
	if pm.Method == coreapi.MethodPix || direct {
		n.Method = &pm.Method
	} else {
		n.PaymentMethodID = &pm.ID
	}
	return n, nil
}

func (h transactionHandlers) create(w http.ResponseWriter, r *http.Request, c Caller) error {
	var in transactionCreateJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	n, err := in.newTransaction()
	if err != nil {
		return err
	}
	// vault-proxy's word that it holds the code of the card it vaulted for
	// this payment; the service confirms it with vault-proxy.
	if held := r.Header.Get(zone.SecurityCodeHeldHeader); held != "" {
		n.SecurityCodeHeld = held == in.PaymentMethod.ID
	}
	pay := h.d.Transactions.PayByCard
	switch {
	case n.Method != nil && *n.Method == coreapi.MethodPix:
		pay = h.d.Transactions.PayByQR
	case n.Method != nil && slices.Contains(coreapi.RedirectMethods, *n.Method):
		pay = h.d.Transactions.PayRedirect
	case n.Method != nil:
		pay = h.d.Transactions.PayDirect // the other methods named without a stored payment method (newTransaction)
	}
	t, err := pay(r.Context(), c.MerchantAccountID, n)
	if errors.Is(err, coreapi.ErrBuyerNotFound) {
		p := "/buyer_id"
		if in.BuyerID == nil {
			p = "/buyer_external_identifier"
		}
		return apierror.BadRequest("invalid request body",
			strictjson.BodyDetail(p, "no buyer with this id and external identifier in this merchant account", "value_error.buyer.not_found"))
	}
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusCreated, transactionOut(t))
}

// transactionError maps the transactions service's errors.
func transactionError(err error) error {
	switch {
	case errors.Is(err, coreapi.ErrCardPaymentsUnavailable):
		return apierror.Unprocessable("no card connector is configured in this environment; card payments are not available yet",
			strictjson.BodyDetail("/payment_method", "card payments are not available", "value_error.payment_method.unavailable"))
	}
	var me *coreapi.MandateError
	if errors.As(err, &me) {
		return apierror.New(http.StatusUnprocessableEntity, me.Code, me.Message,
			strictjson.BodyDetail("/payment_method/id", me.Message, "value_error."+me.Code))
	}
	var pse *coreapi.PaymentServiceError
	if errors.As(err, &pse) {
		return apierror.New(http.StatusUnprocessableEntity, pse.Code, pse.Message,
			strictjson.BodyDetail("/payment_service_id", pse.Message, "value_error."+pse.Code))
	}
	var te *coreapi.TransitionError
	if errors.As(err, &te) {
		msg := string(te.Operation) + " refused in status " + string(te.Status)
		if te.InFlight {
			return apierror.ConcurrentRequest(msg + " while an operation on the transaction is in flight; retry once it settles")
		}
		return apierror.New(http.StatusUnprocessableEntity, te.Code, msg)
	}
	if errors.Is(err, coreapi.ErrNotACardPayment) {
		return apierror.Unprocessable("the transaction is paid neither by a stored card, through a direct integration nor by a redirect")
	}
	if err := directError(err); err != nil {
		return err
	}
	if err := redirectError(err); err != nil {
		return err
	}
	if err := threeDSError(err); err != nil {
		return err
	}
	if errors.Is(err, coreapi.ErrNotInReview) {
		return apierror.New(http.StatusUnprocessableEntity, CodeNotInReview, "the transaction is not flagged for anti-fraud review")
	}
	return domainError(err, "transaction")
}

// transactionJSON is a transaction on the wire (docs/transactions.md,
// "Records").
type transactionJSON struct {
	Type                 string                       `json:"type"`
	ID                   string                       `json:"id"`
	MerchantAccountID    string                       `json:"merchant_account_id"`
	Status               coreapi.TransactionStatus    `json:"status"`
	Intent               string                       `json:"intent"`
	Amount               int64                        `json:"amount"`
	AuthorizedAmount     int64                        `json:"authorized_amount"`
	CapturedAmount       int64                        `json:"captured_amount"`
	RefundedAmount       int64                        `json:"refunded_amount"`
	CapturePendingAmount int64                        `json:"capture_pending_amount"`
	RefundPendingAmount  int64                        `json:"refund_pending_amount"`
	Currency             string                       `json:"currency"`
	Country              *string                      `json:"country"`
	PaymentMethod        transactionPaymentMethodJSON `json:"payment_method"`
	// Buyer names the buyer as a payment method does (DESIGN's
	// transaction record); buyer_id and buyer_external_identifier say the
	// same flat, for filters and clients written against them.
	Buyer                       *buyerRefJSON              `json:"buyer"`
	BuyerID                     *string                    `json:"buyer_id"`
	BuyerExternalIdentifier     *string                    `json:"buyer_external_identifier"`
	PaymentServiceID            *string                    `json:"payment_service_id"`
	PaymentService              *paymentServiceSummaryJSON `json:"payment_service"`
	PaymentServiceTransactionID *string                    `json:"payment_service_transaction_id"`
	answerJSON
	AVSResponseCode     *string            `json:"avs_response_code"`
	CVVResponseCode     *string            `json:"cvv_response_code"`
	SchemeTransactionID *string            `json:"scheme_transaction_id"`
	PaymentSource       string             `json:"payment_source"`
	MerchantInitiated   bool               `json:"merchant_initiated"`
	IsSubsequentPayment bool               `json:"is_subsequent_payment"`
	InstallmentCount    *int32             `json:"installment_count"`
	CartItems           []coreapi.CartItem `json:"cart_items"`
	ExternalIdentifier  *string            `json:"external_identifier"`
	Metadata            map[string]string  `json:"metadata"`
	CreatedAt           string             `json:"created_at"`
	UpdatedAt           string             `json:"updated_at"`
	AuthorizedAt        *string            `json:"authorized_at"`
	CapturedAt          *string            `json:"captured_at"`
	VoidedAt            *string            `json:"voided_at"`
	QRCode              *string            `json:"qr_code"`
	ApprovalExpiresAt   *string            `json:"approval_expires_at"`
	// SessionToken: a direct integration's, in the answer that created
	// it only.
	SessionToken      *string           `json:"session_token"`
	ThreeDSecure      *threeDSecureJSON `json:"three_d_secure"`
	AntiFraudDecision *string           `json:"anti_fraud_decision"`
}

// answerJSON is the processor's answer to an operation, as a transaction
// (its authorization's) and a refund carry it.
type answerJSON struct {
	ErrorCode              *string `json:"error_code"`
	RawResponseCode        *string `json:"raw_response_code"`
	RawResponseDescription *string `json:"raw_response_description"`
}

// paymentServiceSummaryJSON is the payment service that processes a
// transaction; null for the sandbox's built-in configuration.
type paymentServiceSummaryJSON struct {
	ID          string  `json:"id"`
	Connector   string  `json:"connector"`
	DisplayName *string `json:"display_name"`
}

func paymentServiceSummaryOut(s *coreapi.PaymentServiceSummary) *paymentServiceSummaryJSON {
	if s == nil {
		return nil
	}
	return &paymentServiceSummaryJSON{ID: s.ID, Connector: s.Connector, DisplayName: s.DisplayName}
}

type transactionPaymentMethodJSON struct {
	ID          *string `json:"id"`
	Method      string  `json:"method"`
	Scheme      *string `json:"scheme"`
	Label       *string `json:"label"`
	ApprovalURL *string `json:"approval_url"`
}

func transactionOut(t *coreapi.Transaction) transactionJSON {
	pm := t.PaymentMethod
	items := t.CartItems
	if items == nil {
		items = []coreapi.CartItem{}
	}
	meta := t.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return transactionJSON{
		Type: "transaction", ID: t.ID, MerchantAccountID: t.MerchantAccountID, Status: t.Status, Intent: t.Intent,
		Amount: t.Amount, AuthorizedAmount: t.AuthorizedAmount, CapturedAmount: t.CapturedAmount, RefundedAmount: t.RefundedAmount,
		CapturePendingAmount: t.CapturePendingAmount, RefundPendingAmount: t.RefundPendingAmount,
		Currency: t.Currency, Country: t.Country,
		PaymentMethod: transactionPaymentMethodJSON{ID: pm.ID, Method: pm.Method, Scheme: pm.Scheme, Label: pm.Label, ApprovalURL: pm.ApprovalURL},
		Buyer:         transactionBuyer(t), BuyerID: t.BuyerID, BuyerExternalIdentifier: t.BuyerExternalIdentifier,
		PaymentServiceID: t.PaymentServiceID, PaymentService: paymentServiceSummaryOut(t.PaymentService),
		PaymentServiceTransactionID: t.PaymentServiceTransactionID,
		answerJSON:                  answerJSON{t.ErrorCode, t.RawResponseCode, t.RawResponseDescription},
		AVSResponseCode:             t.AVSResponseCode, CVVResponseCode: t.CVVResponseCode, SchemeTransactionID: t.SchemeTransactionID,
		PaymentSource: t.PaymentSource, MerchantInitiated: t.MerchantInitiated, IsSubsequentPayment: t.IsSubsequentPayment,
		InstallmentCount: t.InstallmentCount, CartItems: items, ExternalIdentifier: t.ExternalIdentifier, Metadata: meta,
		CreatedAt: timestamp(t.CreatedAt), UpdatedAt: timestamp(t.UpdatedAt),
		AuthorizedAt: timePtrJSON(t.AuthorizedAt), CapturedAt: timePtrJSON(t.CapturedAt), VoidedAt: timePtrJSON(t.VoidedAt),
		QRCode: t.QRCode, ApprovalExpiresAt: timePtrJSON(t.ApprovalExpiresAt),
		SessionToken: t.SessionToken, ThreeDSecure: threeDSecureOut(t.ThreeDSecure),
		AntiFraudDecision: t.AntiFraudDecision,
	}
}

// transactionBuyer is the transaction's buyer reference; nil (null on the
// wire) for a payment without a buyer.
func transactionBuyer(t *coreapi.Transaction) *buyerRefJSON {
	if t.BuyerID == nil {
		return nil
	}
	return &buyerRefJSON{ID: *t.BuyerID, ExternalIdentifier: t.BuyerExternalIdentifier}
}

func (h transactionHandlers) get(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsRead, "transaction_id")
	if err != nil {
		return err
	}
	t, err := h.d.Transactions.Get(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusOK, transactionOut(t))
}

// list serves GET /transactions?status=&created_at_gte=&created_at_lte=
// &amount_gte=&amount_lte=&buyer_id=&external_identifier=
// &payment_method_id=&payment_service_id=&limit=&cursor=, newest first;
// status may be given several times (any of them), the ranges are
// inclusive. A cursor is bound to the merchant account and the filters it
// was made with.
func (h transactionHandlers) list(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeTransactionsRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f, err := transactionFilter(q)
	if err != nil {
		return err
	}
	page, err := h.d.Cursors.ParseRequest(q, "transactions", transactionBinding(c.MerchantAccountID, f))
	if err != nil {
		return err
	}
	rows, err := h.d.Transactions.List(r.Context(), c.MerchantAccountID, f, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(t coreapi.Transaction) pagination.Key { return pagination.Key{Time: t.CreatedAt, ID: t.ID} })
	return WriteJSON(w, http.StatusOK, pageOf(env, transactionOut))
}

// transactionBinding scopes a list's cursors to the merchant account and
// every filter, each in one canonical form (a time in UTC to the
// nanosecond, "" for a bound not given), so a cursor made under other
// filters is refused.
func transactionBinding(merchant string, f coreapi.TransactionFilter) string {
	bound := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	amount := func(a *int64) string {
		if a == nil {
			return ""
		}
		return strconv.FormatInt(*a, 10)
	}
	parts := []string{merchant, f.BuyerID, f.ExternalIdentifier, f.PaymentMethodID, f.PaymentServiceID,
		bound(f.CreatedAtGTE), bound(f.CreatedAtLTE), amount(f.AmountGTE), amount(f.AmountLTE)}
	for _, st := range f.Statuses {
		parts = append(parts, string(st))
	}
	return pagination.Binding(parts...)
}

// transactionFilter reads the list's filters, every problem at once.
func transactionFilter(q url.Values) (coreapi.TransactionFilter, error) {
	var f coreapi.TransactionFilter
	var details []apierror.Detail
	for _, v := range q["status"] {
		st := coreapi.TransactionStatus(v)
		if !slices.Contains(coreapi.TransactionStatuses, st) {
			details = append(details, queryDetail("status", "must be a transaction status", "value_error.const"))
			continue
		}
		f.Statuses = append(f.Statuses, st)
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"buyer_id", &f.BuyerID}, {"payment_method_id", &f.PaymentMethodID}, {"payment_service_id", &f.PaymentServiceID}} {
		if v := q.Get(p.name); v != "" {
			if !coreapi.IsUUID(v) {
				details = append(details, queryDetail(p.name, "must be a lower-case UUID", "value_error.uuid"))
			}
			*p.dst = v
		}
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"created_at_gte", &f.CreatedAtGTE}, {"created_at_lte", &f.CreatedAtLTE}} {
		vs, ok := q[p.name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, vs[0])
		if len(vs) != 1 || err != nil {
			details = append(details, queryDetail(p.name,
				"must be given once, an RFC 3339 time with its offset (2030-06-15T12:00:00Z; a + in the offset is sent as %2B)", "value_error.datetime"))
			continue
		}
		*p.dst = &t
	}
	for _, p := range []struct {
		name string
		dst  **int64
	}{{"amount_gte", &f.AmountGTE}, {"amount_lte", &f.AmountLTE}} {
		vs, ok := q[p.name]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(vs[0], 10, 64)
		if len(vs) != 1 || err != nil || n < 0 || n > coreapi.MaxTransactionAmount {
			details = append(details, queryDetail(p.name,
				"must be given once, an integer from 0 to "+strconv.Itoa(coreapi.MaxTransactionAmount)+" (minor units)", "value_error.number.range"))
			continue
		}
		*p.dst = &n
	}
	if a, b := f.CreatedAtGTE, f.CreatedAtLTE; a != nil && b != nil && a.After(*b) {
		details = append(details, queryDetail("created_at_gte", "must not be after created_at_lte", "value_error.range"))
	}
	if a, b := f.AmountGTE, f.AmountLTE; a != nil && b != nil && *a > *b {
		details = append(details, queryDetail("amount_gte", "must not be more than amount_lte", "value_error.range"))
	}
	if len(details) > 0 {
		return f, apierror.BadRequest("invalid query", details...)
	}
	var err error
	f.ExternalIdentifier, err = textParam(q, "external_identifier")
	return f, err
}

// events serves GET /transactions/{transaction_id}/events?limit=&cursor=,
// newest first.
func (h transactionHandlers) events(w http.ResponseWriter, r *http.Request) error {
	return transactionPage(h, w, r, "transaction-events", h.d.Transactions.Events,
		func(e coreapi.TransactionEvent) pagination.Key { return pagination.Key{Time: e.CreatedAt, ID: e.ID} }, eventOut)
}

// event serves GET /transactions/{transaction_id}/events/{event_id}: one
// event as the list renders it.
func (h transactionHandlers) event(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsRead, "transaction_id")
	if err != nil {
		return err
	}
	eventID, err := pathUUID(r, "event_id")
	if err != nil {
		return err
	}
	e, err := h.d.Transactions.Event(r.Context(), c.MerchantAccountID, id, eventID)
	if err != nil {
		return domainError(err, "transaction event")
	}
	return WriteJSON(w, http.StatusOK, eventOut(e))
}

// transactionPage serves a page of one transaction's records (kind names
// their cursors), newest first: list reads them, key is a record's
// place in the keyset, view its wire form.
func transactionPage[T, J any](h transactionHandlers, w http.ResponseWriter, r *http.Request, kind string,
	list func(ctx context.Context, merchant, id string, page pagination.Page) ([]T, error),
	key func(T) pagination.Key, view func(*T) J) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeTransactionsRead, "transaction_id")
	if err != nil {
		return err
	}
	page, err := h.d.Cursors.ParseRequest(r.URL.Query(), kind, pagination.Binding(c.MerchantAccountID, id))
	if err != nil {
		return err
	}
	rows, err := list(r.Context(), c.MerchantAccountID, id, page)
	if err != nil {
		return transactionError(err)
	}
	return WriteJSON(w, http.StatusOK, pageOf(pagination.Build(page, rows, key), view))
}

// transactionEventJSON is a transaction event on the wire.
type transactionEventJSON struct {
	Type                   string                     `json:"type"`
	ID                     string                     `json:"id"`
	TransactionID          string                     `json:"transaction_id"`
	Name                   string                     `json:"name"`
	StatusBefore           *coreapi.TransactionStatus `json:"status_before"`
	StatusAfter            coreapi.TransactionStatus  `json:"status_after"`
	Amount                 int64                      `json:"amount"`
	CaptureID              *string                    `json:"capture_id"`
	RefundID               *string                    `json:"refund_id"`
	RawResponseCode        *string                    `json:"raw_response_code"`
	RawResponseDescription *string                    `json:"raw_response_description"`
	Notification           *notificationJSON          `json:"notification"`
	CreatedAt              string                     `json:"created_at"`
}

// notificationJSON is the processor's notification an event records.
type notificationJSON struct {
	ID         string              `json:"id"`
	Connector  string              `json:"connector"`
	RawHeaders map[string][]string `json:"raw_headers"`
	RawBody    string              `json:"raw_body"`
}

func eventOut(e *coreapi.TransactionEvent) transactionEventJSON {
	out := transactionEventJSON{Type: "transaction-event", ID: e.ID, TransactionID: e.TransactionID, Name: e.Name,
		StatusAfter: e.StatusAfter, Amount: e.Amount, CaptureID: e.CaptureID, RefundID: e.RefundID,
		RawResponseCode: e.RawResponseCode, RawResponseDescription: e.RawResponseDescription, CreatedAt: timestamp(e.CreatedAt)}
	if e.StatusBefore != "" {
		out.StatusBefore = &e.StatusBefore
	}
	if n := e.Notification; n != nil {
		out.Notification = &notificationJSON{ID: n.ID, Connector: n.Connector, RawHeaders: n.Headers, RawBody: n.Body}
	}
	return out
}

// decodeOptional decodes r's body strictly into dst, or leaves dst as it
// is when there is none: the bodies of capture, void and refund are all
// optional.
func decodeOptional(r *http.Request, dst any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return DecodeStrict(r, dst)
}

// operation serves a POST on one transaction: the transaction's id and
// the optional body (an In) read by target, one service call, its answer
// with status. The canonical routes name the transaction in the path
// (inPath), their SPEC aliases in the body (inBody, aliases.go).
func operation[In, Out any](status int, target func(r *http.Request, in *In) (string, error),
	call func(r *http.Request, merchant, id string, in In) (Out, error), view func(Out) any) CallerHandler {
	return func(w http.ResponseWriter, r *http.Request, c Caller) error {
		var in In
		id, err := target(r, &in)
		if err != nil {
			return err
		}
		out, err := call(r, c.MerchantAccountID, id, in)
		if err != nil {
			return transactionError(err)
		}
		return WriteJSON(w, status, view(out))
	}
}

// inPath reads the transaction's id from the path and the optional body.
func inPath[In any](r *http.Request, in *In) (string, error) {
	id, err := pathUUID(r, "transaction_id")
	if err != nil {
		return "", err
	}
	return id, decodeOptional(r, in)
}

// The bodies of capture, void and refund.
type (
	captureJSON struct {
		Amount *int64 `json:"amount"`
	}
	voidJSON   struct{}
	refundJSON struct {
		Amount             *int64  `json:"amount"`
		Reason             *string `json:"reason"`
		ExternalIdentifier *string `json:"external_identifier"`
	}
)

// The service calls of capture, void and refund, whichever route names
// the transaction.
func (h transactionHandlers) captureCall(r *http.Request, merchant, id string, in captureJSON) (*coreapi.Transaction, error) {
	return h.d.Transactions.CaptureCard(r.Context(), merchant, id, in.Amount)
}

func (h transactionHandlers) voidCall(r *http.Request, merchant, id string, _ voidJSON) (*coreapi.Transaction, error) {
	return h.d.Transactions.VoidCard(r.Context(), merchant, id)
}

func (h transactionHandlers) refundCall(r *http.Request, merchant, id string, in refundJSON) (*coreapi.Refund, error) {
	return h.d.Transactions.RefundCard(r.Context(), merchant, id,
		coreapi.NewRefund{Amount: in.Amount, Reason: in.Reason, ExternalIdentifier: in.ExternalIdentifier})
}

func (h transactionHandlers) capture() CallerHandler {
	return operation(http.StatusOK, inPath[captureJSON], h.captureCall, transactionView)
}

func (h transactionHandlers) void() CallerHandler {
	return operation(http.StatusOK, inPath[voidJSON], h.voidCall, transactionView)
}

func (h transactionHandlers) refund() CallerHandler {
	return operation(http.StatusCreated, inPath[refundJSON], h.refundCall, refundView)
}

func refundView(rf *coreapi.Refund) any { return refundOut(rf) }

func transactionView(t *coreapi.Transaction) any { return transactionOut(t) }

// refundOutJSON is a refund on the wire.
type refundOutJSON struct {
	Type                   string                  `json:"type"`
	ID                     string                  `json:"id"`
	TransactionID          string                  `json:"transaction_id"`
	Status                 coreapi.OperationStatus `json:"status"`
	Amount                 int64                   `json:"amount"`
	Currency               string                  `json:"currency"`
	Reason                 *string                 `json:"reason"`
	ExternalIdentifier     *string                 `json:"external_identifier"`
	PaymentServiceRefundID *string                 `json:"payment_service_refund_id"`
	answerJSON
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func refundOut(r *coreapi.Refund) refundOutJSON {
	return refundOutJSON{Type: "refund", ID: r.ID, TransactionID: r.TransactionID, Status: r.Status, Amount: r.Amount, Currency: r.Currency,
		Reason: r.Reason, ExternalIdentifier: r.ExternalIdentifier, PaymentServiceRefundID: r.PaymentServiceReference,
		answerJSON: answerJSON{r.ErrorCode, r.RawResponseCode, r.RawResponseDescription},
		CreatedAt:  timestamp(r.CreatedAt), UpdatedAt: timestamp(r.UpdatedAt)}
}
