package mockredirect

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/payorch/shared/simulator"
)

// Handler routes the API, the buyer's approval page and the sandbox
// endpoints (docs/sandbox/mock-redirect.md).
func (m *Main) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/payments", m.create)
	mux.HandleFunc("GET /v1/payments", m.byRef)
	mux.HandleFunc("GET /v1/payments/{id}", m.authorized(func(w http.ResponseWriter, _ *http.Request, p *Payment) { simulator.WriteJSON(w, http.StatusOK, p) }))
	mux.HandleFunc("POST /v1/payments/{id}/cancel", m.authorized(m.cancelPayment))
	mux.HandleFunc("POST /v1/payments/{id}/captures", m.authorized(m.capture))
	mux.HandleFunc("POST /v1/payments/{id}/void", m.authorized(m.void))
	mux.HandleFunc("POST /v1/payments/{id}/refunds", m.authorized(m.refund))
	mux.HandleFunc("GET /pay/{id}", m.page)
	mux.HandleFunc("POST /pay/{id}", m.decide)
	mux.HandleFunc("POST /sandbox/payments/{id}/{action}", m.sandbox)
	m.secrets.Routes(mux)
	mux.HandleFunc("GET /healthz", simulator.Healthz)
	return mux
}

type apiError struct {
	Error string `json:"error"`
}

// keyAndBody reads the request's API key (apiKey) and its JSON body
// (at most limit bytes, no unknown field) into in; false, with the 401 or
// 400 answered, when either is bad.
func keyAndBody(w http.ResponseWriter, r *http.Request, limit int64, in any) (string, bool) {
	key, ok := apiKey(r)
	if !ok {
		simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
		return "", false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_json"})
		return "", false
	}
	return key, true
}

// apiKey is the request's bearer key: any key of the test form
// (KeyPrefix and at least 8 letters, digits, _ or -) is accepted.
func apiKey(r *http.Request) (string, bool) { return simulator.BearerKey(r, KeyPrefix) }

// createRequest is the body of POST /v1/payments.
type createRequest struct {
	Reference       string    `json:"reference"`
	Method          string    `json:"method"`
	Type            string    `json:"type"`
	Amount          int64     `json:"amount"`
	Currency        string    `json:"currency"`
	RedirectURL     string    `json:"redirect_url"`
	NotificationURL string    `json:"notification_url"`
	ExpiresAt       time.Time `json:"expires_at"`
	// CartItems are recorded and answered as sent (an array), never
	// decided on.
	CartItems json.RawMessage `json:"cart_items"`
}

func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && len(s) <= 2048
}

// create answers a new payment (201), or the payment the key created
// with the same reference (200).
func (m *Main) create(w http.ResponseWriter, r *http.Request) {
	var in createRequest
	key, ok := keyAndBody(w, r, 1<<16, &in)
	if !ok {
		return
	}
	now := m.now()
	bad := ""
	switch {
	case in.Reference == "" || len(in.Reference) > 255:
		bad = "invalid_reference"
	case in.Method != "gcash":
		bad = "unsupported_method"
	case in.Type != "sale" && in.Type != "authorization":
		bad = "invalid_type"
	case in.Amount <= 0 || in.Amount > 99_999_999:
		bad = "invalid_amount"
	case !absoluteURL(in.RedirectURL):
		bad = "invalid_redirect_url"
	case !absoluteURL(in.NotificationURL):
		bad = "invalid_notification_url"
	case !in.ExpiresAt.After(now) || in.ExpiresAt.Sub(now) > MaxWindow:
		bad = "invalid_expires_at"
	case !simulator.JSONArrayOrAbsent(in.CartItems):
		bad = "invalid_cart_items"
	}
	if bad != "" {
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{bad})
		return
	}
	if in.Currency != "PHP" {
		// GCash pays in pesos only: a decline of the payment.
		simulator.WriteJSON(w, http.StatusUnprocessableEntity, apiError{"unsupported_currency"})
		return
	}
	m.mu.Lock()
	refKey := key + "\x00" + in.Reference
	if id, ok := m.byReference[refKey]; ok { // the same reference is the same payment
		p := *m.payments[id]
		m.mu.Unlock()
		simulator.WriteJSON(w, http.StatusOK, p)
		return
	}
	id := "mrp_" + randomHex(12)
	p := &Payment{ID: id, Reference: in.Reference, Method: in.Method, Type: in.Type, Amount: in.Amount, Currency: in.Currency,
		Status: StatusPending, ApprovalURL: strings.TrimRight(m.publicURL(), "/") + "/pay/" + id, RedirectURL: in.RedirectURL,
		ExpiresAt: in.ExpiresAt.UTC().Truncate(time.Second), CreatedAt: now, CartItems: in.CartItems,
		apiKey: key, notifyURL: in.NotificationURL}
	instant := in.Amount == InstantApprovalAmount
	if instant {
		p.Status = StatusApproved
	}
	m.add(refKey, p)
	snapshot := *p
	m.mu.Unlock()
	if instant {
		// The notification's first send races (and precedes) the answer;
		// its retries follow in the background.
		var d delivery
		m.deliver(r.Context(), snapshot, &d, 1)
		if d.StatusCode/100 != 2 {
			m.deliverLater(snapshot, d)
		}
	}
	simulator.WriteJSON(w, http.StatusCreated, snapshot)
}

// byRef answers GET /v1/payments?reference=: the key's payment sent with
// that reference.
func (m *Main) byRef(w http.ResponseWriter, r *http.Request) {
	key, ok := apiKey(r)
	if !ok {
		simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.byReference[key+"\x00"+r.URL.Query().Get("reference")]
	if !ok {
		simulator.WriteJSON(w, http.StatusNotFound, apiError{"payment_not_found"})
		return
	}
	p := m.payments[id]
	m.expire(p)
	simulator.WriteJSON(w, http.StatusOK, p)
}

// authorized runs h on the payment the path names, for its own API key,
// under m.mu.
func (m *Main) authorized(h func(http.ResponseWriter, *http.Request, *Payment)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := apiKey(r)
		if !ok {
			simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		p, ok := m.payments[r.PathValue("id")]
		if !ok || p.apiKey != key {
			simulator.WriteJSON(w, http.StatusNotFound, apiError{"payment_not_found"})
			return
		}
		m.expire(p)
		h(w, r, p)
	}
}

// cancelPayment ends a pending payment (expired) so that it can no
// longer be approved; a decided one stays as it is, which the answer
// says. No notification: the caller is the merchant.
func (m *Main) cancelPayment(w http.ResponseWriter, _ *http.Request, p *Payment) {
	if p.Status == StatusPending {
		p.Status = StatusExpired
	}
	simulator.WriteJSON(w, http.StatusOK, p)
}

// decision moves payment id by action (approve, decline, expire) and
// returns it: ok false with the error code and status when it cannot.
func (m *Main) decision(id, action string) (Payment, int, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.payments[id]
	if !ok {
		return Payment{}, http.StatusNotFound, "payment_not_found"
	}
	m.expire(p)
	to := map[string]string{"approve": StatusApproved, "decline": StatusDeclined, "expire": StatusExpired}[action]
	switch {
	case to == "":
		return Payment{}, http.StatusNotFound, "unknown_action"
	case p.Status == to:
		// Deciding again sends the same notification again (the same id),
		// as a processor's retry would.
	case p.Status != StatusPending:
		return *p, http.StatusConflict, "payment_" + p.Status
	}
	p.Status = to
	return *p, http.StatusOK, ""
}

// sandboxResult answers POST /sandbox/payments/{id}/{action}.
type sandboxResult struct {
	Payment  Payment  `json:"payment"`
	Delivery delivery `json:"delivery"`
}

// sandbox plays the buyer (approve, decline) or the clock (expire)
// without a browser: the payment is moved and its notification sent,
// retried on anything but a 2xx, before the answer.
func (m *Main) sandbox(w http.ResponseWriter, r *http.Request) {
	p, status, code := m.decision(r.PathValue("id"), r.PathValue("action"))
	if code != "" {
		simulator.WriteJSON(w, status, apiError{code})
		return
	}
	var d delivery
	m.deliver(r.Context(), p, &d, m.Config.DeliveryAttempts)
	simulator.WriteJSON(w, http.StatusOK, sandboxResult{Payment: p, Delivery: d})
}

var pageTemplate = template.Must(template.New("pay").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mock-redirect: approve the payment</title>
<style>body{font-family:sans-serif;max-width:28rem;margin:3rem auto}button{font-size:1rem;margin-right:1rem}</style></head>
<body><h1>GCash (sandbox)</h1>
<p>Pay <strong>{{.Amount}} {{.Currency}}</strong> (minor units), reference <code>{{.Reference}}</code>.</p>
{{if eq .Status "pending"}}<p>Approve before {{.ExpiresAt.Format "2006-01-02 15:04:05 UTC"}}.</p>
<form method="post" action="/pay/{{.ID}}"><button name="decision" value="approve">Approve</button><button name="decision" value="decline">Decline</button></form>
{{else}}<p>This payment is <strong>{{.Status}}</strong>.</p>{{end}}
</body></html>
`))

// page is the buyer's approval page.
func (m *Main) page(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	p, ok := m.payments[r.PathValue("id")]
	var snapshot Payment
	if ok {
		m.expire(p)
		snapshot = *p
	}
	m.mu.Unlock()
	if !ok {
		http.Error(w, "no such payment", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	_ = pageTemplate.Execute(w, snapshot)
}

// decide takes the page's form (decision=approve or decline): the buyer
// is sent back to the merchant's redirect_url with the transaction's id
// (the payment's reference) and the outcome, and the notification is sent
// in the background, whether or not the browser follows.
func (m *Main) decide(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "unreadable form", http.StatusBadRequest)
		return
	}
	action := r.PostForm.Get("decision")
	if action != "approve" && action != "decline" {
		http.Error(w, "decision must be approve or decline", http.StatusBadRequest)
		return
	}
	p, status, code := m.decision(r.PathValue("id"), action)
	if code != "" {
		http.Error(w, code, status)
		return
	}
	m.deliverLater(p, delivery{})
	http.Redirect(w, r, returnURL(p), http.StatusSeeOther)
}

// returnURL is p's redirect_url with transaction_id (the reference) and
// status added to its query.
func returnURL(p Payment) string {
	u, err := url.Parse(p.RedirectURL)
	if err != nil {
		return p.RedirectURL
	}
	q := u.Query()
	q.Set("transaction_id", p.Reference)
	q.Set("status", p.Status)
	u.RawQuery = q.Encode()
	return u.String()
}
