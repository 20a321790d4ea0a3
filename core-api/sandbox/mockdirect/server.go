package mockdirect

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/payorch/shared/simulator"
)

// Order statuses, as PayPal names them; DECLINED is the sandbox's record
// of a buyer who declined (PayPal leaves such an order CREATED until it
// expires).
const (
	StatusCreated   = "CREATED"
	StatusApproved  = "APPROVED"
	StatusDeclined  = "DECLINED"
	StatusCompleted = "COMPLETED"
)

// Intents of an order.
const (
	IntentCapture   = "CAPTURE"
	IntentAuthorize = "AUTHORIZE"
)

// Issues of a 422 answer (details[0].issue).
const (
	IssueNotApproved     = "ORDER_NOT_APPROVED"      // the buyer has not decided yet
	IssueDeclinedByPayer = "ORDER_DECLINED_BY_PAYER" // the buyer declined: the order cannot be completed
	IssueIntentMismatch  = "ACTION_DOES_NOT_MATCH_INTENT"
	IssueAlreadyDone     = "ORDER_ALREADY_COMPLETED"
	IssueRequestIDReused = "DUPLICATE_REQUEST_ID_MISMATCH" // a request id sent again with another request
	IssueAlreadyDecided  = "ORDER_ALREADY_DECIDED"         // the buyer's decision cannot change
	// Issues of the operations on a completed order's payment.
	IssueNotCompleted     = "ORDER_NOT_COMPLETED"            // capture, void or refund before the order is completed
	IssueNotAuthorized    = "ORDER_NOT_AUTHORIZED"           // capture or void of a CAPTURE order
	IssueVoided           = "AUTHORIZATION_VOIDED"           // capture or void of a voided authorization
	IssueAlreadyCaptured  = "AUTHORIZATION_ALREADY_CAPTURED" // void after a capture
	IssueCaptureExceeded  = "MAX_CAPTURE_AMOUNT_EXCEEDED"    // captures beyond the authorized amount
	IssueRefundExceeded   = "REFUND_AMOUNT_EXCEEDED"         // refunds beyond the captured amount
	IssueCurrencyMismatch = "CURRENCY_MISMATCH"
	IssueInvalidAmount    = "INVALID_PARAMETER_VALUE"
)

// Amount is an order's amount: PayPal's shape, the value in minor units.
type Amount struct {
	CurrencyCode string `json:"currency_code"`
	Value        int64  `json:"value"`
}

// Payment is a capture or authorization of a completed order.
type Payment struct {
	ID     string `json:"id"`
	Status string `json:"status"` // COMPLETED (capture, refund); CREATED, PARTIALLY_CAPTURED, CAPTURED or VOIDED (authorization)
	Amount Amount `json:"amount"`
	// RequestID is the PayPal-Request-Id the capture or refund was made
	// with: what a merchant finds a lost answer's operation by.
	RequestID string `json:"request_id,omitempty"`
}

// PaymentAmount is the body of a capture or refund of a completed order.
type PaymentAmount struct {
	Amount Amount `json:"amount"`
}

// Link is one of an order's HATEOAS links.
type Link struct {
	Href   string `json:"href"`
	Rel    string `json:"rel"`
	Method string `json:"method"`
}

// Order is an order on the wire.
type Order struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Intent      string `json:"intent"`
	ReferenceID string `json:"reference_id"`
	Amount      Amount `json:"amount"`
	// CartItems are the order's, as sent (absent when none).
	CartItems json.RawMessage `json:"cart_items,omitempty"`
	Payments  *struct {
		Captures       []Payment `json:"captures,omitempty"`
		Authorizations []Payment `json:"authorizations,omitempty"`
		Refunds        []Payment `json:"refunds,omitempty"`
	} `json:"payments,omitempty"`
	Links      []Link    `json:"links"`
	CreateTime time.Time `json:"create_time"`
	UpdateTime time.Time `json:"update_time"`

	clientID string
}

// CreateOrder is POST /v2/checkout/orders.
type CreateOrder struct {
	Intent      string `json:"intent"`
	ReferenceID string `json:"reference_id"`
	Amount      Amount `json:"amount"`
	// CartItems are recorded and answered as sent (an array), never
	// decided on.
	CartItems json.RawMessage `json:"cart_items,omitempty"`
}

// Error is every error answer: PayPal's shape.
type Error struct {
	Name    string        `json:"name"`
	Message string        `json:"message"`
	Details []ErrorDetail `json:"details,omitempty"`
}

// ErrorDetail names the issue.
type ErrorDetail struct {
	Issue       string `json:"issue"`
	Description string `json:"description,omitempty"`
}

// RequestIDHeader makes a POST idempotent: once it succeeded, the same id
// and body is the stored answer, byte for byte.
const RequestIDHeader = "PayPal-Request-Id"

// answer is a stored answer of a request id.
type answer struct {
	bodyHash [32]byte
	status   int
	body     []byte
}

// store holds the orders and the answers of request ids, bounded: the
// oldest orders are forgotten first.
type store struct {
	mu      sync.Mutex
	max     int
	orders  map[string]*Order
	fifo    []string
	answers map[string]answer // clientID + " " + request id + " " + path
	akeys   []string
}

func newStore(max int) *store {
	return &store{max: max, orders: map[string]*Order{}, answers: map[string]answer{}}
}

func (s *store) addOrder(o *Order) {
	s.orders[o.ID] = o
	s.fifo = append(s.fifo, o.ID)
	for len(s.fifo) > s.max {
		delete(s.orders, s.fifo[0])
		s.fifo = s.fifo[1:]
	}
}

func (s *store) addAnswer(k string, a answer) {
	s.answers[k] = a
	s.akeys = append(s.akeys, k)
	for len(s.akeys) > s.max {
		delete(s.answers, s.akeys[0])
		s.akeys = s.akeys[1:]
	}
}

type server struct {
	s    *store
	base string
	now  func() time.Time
	mux  *http.ServeMux
}

func newServer(s *store, base string, now func() time.Time) http.Handler {
	srv := &server{s: s, base: strings.TrimRight(base, "/"), now: now, mux: http.NewServeMux()}
	srv.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	srv.mux.HandleFunc("POST /v2/checkout/orders", srv.merchant(srv.idempotent(srv.create)))
	srv.mux.HandleFunc("GET /v2/checkout/orders/{id}", srv.merchant(srv.get))
	srv.mux.HandleFunc("POST /v2/checkout/orders/{id}/capture", srv.merchant(srv.idempotent(srv.complete(IntentCapture))))
	srv.mux.HandleFunc("POST /v2/checkout/orders/{id}/authorize", srv.merchant(srv.idempotent(srv.complete(IntentAuthorize))))
	srv.mux.HandleFunc("POST /v2/checkout/orders/{id}/captures", srv.merchant(srv.idempotent(srv.captureAuthorization)))
	srv.mux.HandleFunc("POST /v2/checkout/orders/{id}/void", srv.merchant(srv.idempotent(srv.void)))
	srv.mux.HandleFunc("POST /v2/checkout/orders/{id}/refunds", srv.merchant(srv.idempotent(srv.refund)))
	srv.mux.HandleFunc("GET /checkoutnow", srv.page)
	srv.mux.HandleFunc("POST /sandbox/orders/{id}/approve", srv.decide(StatusApproved))
	srv.mux.HandleFunc("POST /sandbox/orders/{id}/decline", srv.decide(StatusDeclined))
	return srv.mux
}

// clientIDRE is a sandbox client id: any of this form is accepted, as a
// processor's sandbox accepts its test apps.
var (
	clientIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,128}$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

type handler func(w http.ResponseWriter, r *http.Request, clientID string, body []byte) (int, any)

// merchant authenticates the merchant's server (HTTP Basic: client id and
// secret), reads the body and writes the answer.
func (srv *server) merchant(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || !clientIDRE.MatchString(id) || secret == "" {
			simulator.WriteJSON(w, http.StatusUnauthorized, Error{Name: "AUTHENTICATION_FAILURE", Message: "client id (8 to 128 letters, digits, _ or -) and secret required (HTTP Basic)"})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			simulator.WriteJSON(w, http.StatusBadRequest, Error{Name: "INVALID_REQUEST", Message: "body too large"})
			return
		}
		status, out := h(w, r, id, body)
		simulator.WriteJSON(w, status, out)
	}
}

// idempotent answers a request id sent again with its stored answer.
func (srv *server) idempotent(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, clientID string, body []byte) (int, any) {
		rid := r.Header.Get(RequestIDHeader)
		if rid == "" || len(rid) > 108 {
			return http.StatusBadRequest, Error{Name: "INVALID_REQUEST", Message: RequestIDHeader + " is required (1 to 108 characters)"}
		}
		k := clientID + " " + rid + " " + r.URL.Path
		sum := sha256.Sum256(body)
		srv.s.mu.Lock()
		defer srv.s.mu.Unlock()
		if a, ok := srv.s.answers[k]; ok {
			if a.bodyHash != sum {
				return http.StatusUnprocessableEntity, unprocessable(IssueRequestIDReused, "this request id was sent with another request")
			}
			return a.status, json.RawMessage(a.body)
		}
		status, out := h(w, r, clientID, body)
		raw, _ := json.Marshal(out)
		// Only what was done is kept: a refusal (an order not approved
		// yet) may be answered otherwise when the same request comes again.
		if status < 300 {
			srv.s.addAnswer(k, answer{bodyHash: sum, status: status, body: raw})
		}
		return status, json.RawMessage(raw)
	}
}

// create is POST /v2/checkout/orders (under the store's lock).
func (srv *server) create(_ http.ResponseWriter, _ *http.Request, clientID string, body []byte) (int, any) {
	var in CreateOrder
	if err := json.Unmarshal(body, &in); err != nil {
		return http.StatusBadRequest, Error{Name: "INVALID_REQUEST", Message: "body must be a JSON order"}
	}
	var details []ErrorDetail
	if in.Intent != IntentCapture && in.Intent != IntentAuthorize {
		details = append(details, ErrorDetail{Issue: "INVALID_PARAMETER_VALUE", Description: "intent must be CAPTURE or AUTHORIZE"})
	}
	if in.Amount.Value < 1 || in.Amount.Value > 99_999_999 {
		details = append(details, ErrorDetail{Issue: "INVALID_PARAMETER_VALUE", Description: "amount.value must be from 1 to 99999999 (minor units)"})
	}
	if !currencyRE.MatchString(in.Amount.CurrencyCode) {
		details = append(details, ErrorDetail{Issue: "INVALID_PARAMETER_VALUE", Description: "amount.currency_code must be an ISO 4217 code"})
	}
	if !simulator.JSONArrayOrAbsent(in.CartItems) {
		details = append(details, ErrorDetail{Issue: "INVALID_PARAMETER_VALUE", Description: "cart_items must be an array"})
	}
	if len(in.ReferenceID) > 256 {
		details = append(details, ErrorDetail{Issue: "INVALID_PARAMETER_VALUE", Description: "reference_id must be at most 256 characters"})
	}
	if details != nil {
		return http.StatusUnprocessableEntity, Error{Name: "UNPROCESSABLE_ENTITY", Message: "the order is invalid", Details: details}
	}
	now := srv.now()
	o := &Order{ID: newID("MDO"), Status: StatusCreated, Intent: in.Intent, ReferenceID: in.ReferenceID, Amount: in.Amount,
		CartItems: in.CartItems, CreateTime: now, UpdateTime: now, clientID: clientID}
	o.Links = []Link{
		{Href: srv.base + "/v2/checkout/orders/" + o.ID, Rel: "self", Method: "GET"},
		{Href: srv.base + "/checkoutnow?token=" + o.ID, Rel: "approve", Method: "GET"},
	}
	srv.s.addOrder(o)
	return http.StatusCreated, o
}

// order is the client's order id, or the 404 answer.
func (srv *server) order(id, clientID string) (*Order, *Error) {
	o, ok := srv.s.orders[id]
	if !ok || o.clientID != clientID {
		return nil, &Error{Name: "RESOURCE_NOT_FOUND", Message: "no such order", Details: []ErrorDetail{{Issue: "INVALID_RESOURCE_ID"}}}
	}
	return o, nil
}

func (srv *server) get(_ http.ResponseWriter, r *http.Request, clientID string, _ []byte) (int, any) {
	srv.s.mu.Lock()
	defer srv.s.mu.Unlock()
	o, e := srv.order(r.PathValue("id"), clientID)
	if e != nil {
		return http.StatusNotFound, e
	}
	return http.StatusOK, o
}

// complete captures or authorizes an approved order (under the store's
// lock, from idempotent).
func (srv *server) complete(action string) handler {
	return func(_ http.ResponseWriter, r *http.Request, clientID string, _ []byte) (int, any) {
		o, e := srv.order(r.PathValue("id"), clientID)
		switch {
		case e != nil:
			return http.StatusNotFound, e
		case o.Intent != action:
			return http.StatusUnprocessableEntity, unprocessable(IssueIntentMismatch, "the order's intent is "+o.Intent)
		case o.Status == StatusCreated:
			return http.StatusUnprocessableEntity, unprocessable(IssueNotApproved, "the buyer has not approved the order")
		case o.Status == StatusDeclined:
			return http.StatusUnprocessableEntity, unprocessable(IssueDeclinedByPayer, "the buyer declined the order")
		case o.Status == StatusCompleted:
			return http.StatusUnprocessableEntity, unprocessable(IssueAlreadyDone, "the order is already completed")
		}
		o.Status, o.UpdateTime = StatusCompleted, srv.now()
		o.Payments = &struct {
			Captures       []Payment `json:"captures,omitempty"`
			Authorizations []Payment `json:"authorizations,omitempty"`
			Refunds        []Payment `json:"refunds,omitempty"`
		}{}
		if action == IntentCapture {
			o.Payments.Captures = []Payment{{ID: newID("MDC"), Status: "COMPLETED", Amount: o.Amount}}
		} else {
			o.Payments.Authorizations = []Payment{{ID: newID("MDA"), Status: "CREATED", Amount: o.Amount}}
		}
		return http.StatusCreated, o
	}
}

// completed is the client's completed order of the request, or the
// refusal.
func (srv *server) completed(r *http.Request, clientID string) (*Order, int, *Error) {
	o, e := srv.order(r.PathValue("id"), clientID)
	switch {
	case e != nil:
		return nil, http.StatusNotFound, e
	case o.Status != StatusCompleted:
		e := unprocessable(IssueNotCompleted, "the order is "+o.Status)
		return nil, http.StatusUnprocessableEntity, &e
	}
	return o, 0, nil
}

// operationAmount reads a capture's or refund's amount, in the order's
// currency.
func operationAmount(o *Order, body []byte) (Amount, int, *Error) {
	var in PaymentAmount
	if err := json.Unmarshal(body, &in); err != nil {
		return Amount{}, http.StatusBadRequest, &Error{Name: "INVALID_REQUEST", Message: "body must be {\"amount\":{...}}"}
	}
	if in.Amount.Value < 1 {
		e := unprocessable(IssueInvalidAmount, "amount.value must be at least 1 (minor units)")
		return Amount{}, http.StatusUnprocessableEntity, &e
	}
	if in.Amount.CurrencyCode != o.Amount.CurrencyCode {
		e := unprocessable(IssueCurrencyMismatch, "the order's currency is "+o.Amount.CurrencyCode)
		return Amount{}, http.StatusUnprocessableEntity, &e
	}
	return in.Amount, 0, nil
}

func total(ps []Payment) int64 {
	var n int64
	for _, p := range ps {
		n += p.Amount.Value
	}
	return n
}

// captureAuthorization captures part or all of what is left of a
// completed AUTHORIZE order's authorization; captures may follow one
// another up to the authorized amount (under the store's lock, from
// idempotent).
func (srv *server) captureAuthorization(_ http.ResponseWriter, r *http.Request, clientID string, body []byte) (int, any) {
	o, status, e := srv.completed(r, clientID)
	if e != nil {
		return status, e
	}
	if o.Intent != IntentAuthorize {
		return http.StatusUnprocessableEntity, unprocessable(IssueNotAuthorized, "the order's intent is "+o.Intent)
	}
	a, status, e := operationAmount(o, body)
	if e != nil {
		return status, e
	}
	auth := &o.Payments.Authorizations[0]
	switch left := auth.Amount.Value - total(o.Payments.Captures); {
	case auth.Status == "VOIDED":
		return http.StatusUnprocessableEntity, unprocessable(IssueVoided, "the authorization is voided")
	case a.Value > left:
		return http.StatusUnprocessableEntity, unprocessable(IssueCaptureExceeded, "the capture exceeds what is left of the authorization")
	case a.Value == left:
		auth.Status = "CAPTURED"
	default:
		auth.Status = "PARTIALLY_CAPTURED"
	}
	c := Payment{ID: newID("MDC"), Status: "COMPLETED", Amount: a, RequestID: r.Header.Get(RequestIDHeader)}
	o.Payments.Captures = append(o.Payments.Captures, c)
	o.UpdateTime = srv.now()
	return http.StatusCreated, c
}

// void voids a completed AUTHORIZE order's authorization before any
// capture (under the store's lock, from idempotent).
func (srv *server) void(_ http.ResponseWriter, r *http.Request, clientID string, _ []byte) (int, any) {
	o, status, e := srv.completed(r, clientID)
	switch {
	case e != nil:
		return status, e
	case o.Intent != IntentAuthorize:
		return http.StatusUnprocessableEntity, unprocessable(IssueNotAuthorized, "the order's intent is "+o.Intent)
	case o.Payments.Authorizations[0].Status == "VOIDED":
		return http.StatusUnprocessableEntity, unprocessable(IssueVoided, "the authorization is voided")
	case len(o.Payments.Captures) > 0:
		return http.StatusUnprocessableEntity, unprocessable(IssueAlreadyCaptured, "the authorization is captured")
	}
	o.Payments.Authorizations[0].Status = "VOIDED"
	o.UpdateTime = srv.now()
	return http.StatusOK, o
}

// refund refunds part or all of what is left of a completed order's
// captures; refunds may follow one another up to the captured amount
// (under the store's lock, from idempotent).
func (srv *server) refund(_ http.ResponseWriter, r *http.Request, clientID string, body []byte) (int, any) {
	o, status, e := srv.completed(r, clientID)
	if e != nil {
		return status, e
	}
	a, status, e := operationAmount(o, body)
	if e != nil {
		return status, e
	}
	if a.Value > total(o.Payments.Captures)-total(o.Payments.Refunds) {
		return http.StatusUnprocessableEntity, unprocessable(IssueRefundExceeded, "the refund exceeds what is left of the captures")
	}
	p := Payment{ID: newID("MDR"), Status: "COMPLETED", Amount: a, RequestID: r.Header.Get(RequestIDHeader)}
	o.Payments.Refunds = append(o.Payments.Refunds, p)
	o.UpdateTime = srv.now()
	return http.StatusCreated, p
}

// decide records the buyer's decision: no merchant credentials, as the
// buyer's wallet session is not the merchant's. The same decision again
// is no error; another one is 422.
func (srv *server) decide(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		srv.s.mu.Lock()
		defer srv.s.mu.Unlock()
		o, ok := srv.s.orders[r.PathValue("id")]
		switch {
		case !ok:
			simulator.WriteJSON(w, http.StatusNotFound, Error{Name: "RESOURCE_NOT_FOUND", Message: "no such order", Details: []ErrorDetail{{Issue: "INVALID_RESOURCE_ID"}}})
			return
		case o.Status != StatusCreated && o.Status != status:
			simulator.WriteJSON(w, http.StatusUnprocessableEntity, unprocessable(IssueAlreadyDecided, "the order is "+o.Status))
			return
		case o.Status == StatusCreated:
			o.Status, o.UpdateTime = status, srv.now()
		}
		simulator.WriteJSON(w, http.StatusOK, o)
	}
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>mock-direct sandbox checkout</title></head>
<body><h1>mock-direct sandbox checkout</h1>
<p>Order {{.ID}}: {{.Amount.Value}} (minor units) {{.Amount.CurrencyCode}}, intent {{.Intent}}, status {{.Status}}.</p>
<form method="post" action="/sandbox/orders/{{.ID}}/approve"><button>Approve as the buyer</button></form>
<form method="post" action="/sandbox/orders/{{.ID}}/decline"><button>Decline as the buyer</button></form>
</body></html>`))

// page is the buyer's approval page (the order's approve link).
func (srv *server) page(w http.ResponseWriter, r *http.Request) {
	srv.s.mu.Lock()
	o, ok := srv.s.orders[r.URL.Query().Get("token")]
	var cp Order
	if ok {
		cp = *o
	}
	srv.s.mu.Unlock()
	if !ok {
		http.Error(w, "no such order", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTmpl.Execute(w, cp)
}

func unprocessable(issue, msg string) Error {
	return Error{Name: "UNPROCESSABLE_ENTITY", Message: msg, Details: []ErrorDetail{{Issue: issue}}}
}

// newID is prefix-<20 random characters>.
func newID(prefix string) string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return prefix + "-" + strings.ToUpper(hex.EncodeToString(b[:5])) + base64.RawURLEncoding.EncodeToString(b[5:])[:10]
}
