package mockbank

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/payorch/shared/simulator"
)

// Mandate and debit statuses.
const (
	MandatePending           = "pending"
	MandateActive            = "active"
	MandateRevoked           = "revoked"
	MandateFailed            = "failed"
	DebitPending             = "pending"
	DebitSucceeded           = "succeeded"
	DebitFailed              = "failed"
	DeclinedHolder           = "Mandate Declined" // a mandate for this holder is failed at once
	FailureInsufficientFunds = "insufficient_funds"
)

// schemeCurrencies is the one currency each scheme settles in.
var schemeCurrencies = map[string]string{"ach": "USD", "sepa": "EUR", "bacs": "GBP"}

// Mandate is a bank debit mandate, as the API answers it.
type Mandate struct {
	ID                string    `json:"id"`
	Reference         string    `json:"reference"`
	Scheme            string    `json:"scheme"`
	Currency          string    `json:"currency"`
	AccountHolderName string    `json:"account_holder_name"`
	Status            string    `json:"status"`
	RecurringToken    bool      `json:"recurring_token"` // merchant-initiated charges may be made under it
	CreatedAt         time.Time `json:"created_at"`

	apiKey    string
	notifyURL string
}

// Debit is a bank debit, as the API answers it.
type Debit struct {
	ID          string    `json:"id"`
	Reference   string    `json:"reference"`
	Account     string    `json:"account"`
	Scheme      string    `json:"scheme"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	MandateID   string    `json:"mandate_id,omitempty"`
	Status      string    `json:"status"`
	FailureCode string    `json:"failure_code,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// CartItems are the request's, as sent (absent when none).
	CartItems json.RawMessage `json:"cart_items,omitempty"`

	apiKey    string
	notifyURL string
	result    string // the status it settles to
}

func (m *Main) bankRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/mandates", m.keyed(m.createMandate))
	mux.HandleFunc("GET /v1/mandates/{id}", m.keyed(m.mandateOf(func(w http.ResponseWriter, _ *http.Request, md *Mandate) {
		simulator.WriteJSON(w, http.StatusOK, md)
	})))
	mux.HandleFunc("POST /v1/mandates/{id}/revoke", m.keyed(m.mandateOf(func(w http.ResponseWriter, _ *http.Request, md *Mandate) {
		if md.Status != MandateFailed {
			md.Status = MandateRevoked
		}
		simulator.WriteJSON(w, http.StatusOK, md)
	})))
	mux.HandleFunc("POST /v1/debits", m.keyed(m.createDebit))
	mux.HandleFunc("GET /v1/debits", m.keyed(m.listDebits))
	mux.HandleFunc("GET /v1/debits/{id}", m.keyed(func(w http.ResponseWriter, r *http.Request, key string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		d, ok := m.debits[r.PathValue("id")]
		if !ok || d.apiKey != key {
			simulator.WriteJSON(w, http.StatusNotFound, apiError{"debit_not_found"})
			return
		}
		simulator.WriteJSON(w, http.StatusOK, d)
	}))
	mux.HandleFunc("POST /sandbox/mandates/{id}/activate", m.activate)
	mux.HandleFunc("POST /sandbox/mandates/{id}/recurring-token", m.recurringToken)
	mux.HandleFunc("POST /sandbox/mandates/{id}/revoke", m.revokeByBank)
	mux.HandleFunc("POST /sandbox/debits/{id}/notify", m.renotifyDebit)
}

// keyed runs h with the request's API key, or answers 401.
func (m *Main) keyed(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := apiKey(r)
		if !ok {
			simulator.WriteJSON(w, http.StatusUnauthorized, apiError{"invalid_api_key"})
			return
		}
		h(w, r, key)
	}
}

// mandateOf runs h on the key's mandate the path names, m.mu held.
func (m *Main) mandateOf(h func(http.ResponseWriter, *http.Request, *Mandate)) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, key string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		md, ok := m.mandates[r.PathValue("id")]
		if !ok || md.apiKey != key {
			simulator.WriteJSON(w, http.StatusNotFound, apiError{"mandate_not_found"})
			return
		}
		h(w, r, md)
	}
}

// decode reads a JSON body strictly into v, or answers 400 invalid_json.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_json"})
		return false
	}
	return true
}

func validURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// createMandate is POST /v1/mandates: pending (failed for DeclinedHolder)
// until a tester plays the bank. The same reference is the same mandate.
func (m *Main) createMandate(w http.ResponseWriter, r *http.Request, key string) {
	var in struct {
		Reference         string `json:"reference"`
		Scheme            string `json:"scheme"`
		Currency          string `json:"currency"`
		AccountHolderName string `json:"account_holder_name"`
		NotificationURL   string `json:"notification_url"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch {
	case in.Reference == "" || len(in.Reference) > 255:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_reference"})
		return
	case schemeCurrencies[in.Scheme] == "":
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"unsupported_scheme"})
		return
	case !validURL(in.NotificationURL):
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_notification_url"})
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	refKey := key + "\x00mandate\x00" + in.Reference
	if id, ok := m.byReference[refKey]; ok {
		simulator.WriteJSON(w, http.StatusOK, m.mandates[id])
		return
	}
	md := &Mandate{ID: "mbm_" + randomHex(12), Reference: in.Reference, Scheme: in.Scheme, Currency: in.Currency,
		AccountHolderName: in.AccountHolderName, Status: MandatePending, CreatedAt: m.Now().UTC(), apiKey: key, notifyURL: in.NotificationURL}
	if in.AccountHolderName == DeclinedHolder {
		md.Status = MandateFailed
	}
	m.mandates[md.ID], m.byReference[refKey] = md, md.ID
	simulator.WriteJSON(w, http.StatusCreated, md)
}

// createDebit is POST /v1/debits: accepted pending, its result notified
// after DebitDelay. An amount whose last two digits are 51 fails with
// insufficient_funds. A debit naming a mandate (a merchant-initiated
// charge) needs it active with its recurring token issued.
func (m *Main) createDebit(w http.ResponseWriter, r *http.Request, key string) {
	var in struct {
		Reference       string `json:"reference"`
		Account         string `json:"account"`
		Scheme          string `json:"scheme"`
		Amount          int64  `json:"amount"`
		Currency        string `json:"currency"`
		MandateID       string `json:"mandate_id"`
		NotificationURL string `json:"notification_url"`
		// CartItems are recorded and answered as sent (an array), never
		// decided on.
		CartItems json.RawMessage `json:"cart_items"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch {
	case in.Reference == "" || len(in.Reference) > 255:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_reference"})
		return
	case in.Account == "":
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_account"})
		return
	case schemeCurrencies[in.Scheme] == "":
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"unsupported_scheme"})
		return
	case in.Amount <= 0 || in.Amount > 99_999_999:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_amount"})
		return
	case in.Currency != schemeCurrencies[in.Scheme]:
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"unsupported_currency"})
		return
	case !validURL(in.NotificationURL):
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_notification_url"})
		return
	case !simulator.JSONArrayOrAbsent(in.CartItems):
		simulator.WriteJSON(w, http.StatusBadRequest, apiError{"invalid_cart_items"})
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	refKey := key + "\x00debit\x00" + in.Reference
	if id, ok := m.byReference[refKey]; ok {
		simulator.WriteJSON(w, http.StatusOK, m.debits[id])
		return
	}
	if in.MandateID != "" {
		md, ok := m.mandates[in.MandateID]
		switch {
		case !ok || md.apiKey != key:
			simulator.WriteJSON(w, http.StatusNotFound, apiError{"mandate_not_found"})
			return
		case md.Status != MandateActive || !md.RecurringToken || md.Scheme != in.Scheme:
			simulator.WriteJSON(w, http.StatusUnprocessableEntity, apiError{"mandate_not_active"})
			return
		}
	}
	d := &Debit{ID: "mbd_" + randomHex(12), Reference: in.Reference, Account: in.Account, Scheme: in.Scheme, Amount: in.Amount,
		Currency: in.Currency, MandateID: in.MandateID, Status: DebitPending, CreatedAt: m.Now().UTC(), CartItems: in.CartItems,
		apiKey: key, notifyURL: in.NotificationURL, result: DebitSucceeded}
	if in.Amount%100 == 51 {
		d.result = DebitFailed
	}
	m.debits[d.ID], m.byReference[refKey] = d, d.ID
	m.debitOrder = append(m.debitOrder, d.ID)
	m.sending.Add(1)
	go m.settleDebit(d.ID)
	simulator.WriteJSON(w, http.StatusCreated, d)
}

// listDebits is GET /v1/debits: the key's debits in creation order,
// optionally those of one mandate (?mandate_id=) or reference.
func (m *Main) listDebits(w http.ResponseWriter, r *http.Request, key string) {
	mandate, ref := r.URL.Query().Get("mandate_id"), r.URL.Query().Get("reference")
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*Debit{}
	for _, id := range m.debitOrder {
		d := m.debits[id]
		if d.apiKey == key && (mandate == "" || d.MandateID == mandate) && (ref == "" || d.Reference == ref) {
			out = append(out, d)
		}
	}
	simulator.WriteJSON(w, http.StatusOK, map[string]any{"items": out})
}

// settleDebit settles debit id after DebitDelay and sends its result.
func (m *Main) settleDebit(id string) {
	defer m.sending.Done()
	select {
	case <-m.background.Done():
		return
	case <-time.After(m.Config.DebitDelay):
	}
	m.mu.Lock()
	d := m.debits[id]
	d.Status = d.result
	if d.Status == DebitFailed {
		d.FailureCode = FailureInsufficientFunds
	}
	snapshot := *d
	m.mu.Unlock()
	m.notify(m.background, snapshot.apiKey, snapshot.notifyURL, debitType(&snapshot), snapshot.ID, &snapshot)
}

// debitType is the notification type of a settled debit: a one-off
// debit's, or a recurring charge's (under a mandate).
func debitType(d *Debit) string {
	kind := "debit."
	if d.MandateID != "" {
		kind = "recurring_charge."
	}
	return kind + d.Status
}

// notificationID is the id of the notification of type typ about object
// id: the same on every send, so a receiver can tell a retry.
func notificationID(id, typ string) string {
	h := sha256.Sum256([]byte(id + "\x00" + typ))
	return "mbn_" + hex.EncodeToString(h[:12])
}

// notify signs and sends a notification of type typ about data, created
// with key.
func (m *Main) notify(ctx context.Context, key, url, typ, objectID string, data any) delivery {
	id := notificationID(objectID, typ)
	body, _ := json.Marshal(Notification{ID: id, Type: typ, CreatedAt: m.Now().UTC(), Data: data})
	return m.deliver(ctx, key, url, id, body)
}

// mandateResult answers the sandbox's mandate endpoints.
type mandateResult struct {
	Mandate    *Mandate   `json:"mandate"`
	Deliveries []delivery `json:"deliveries"`
}

// playBank runs change on the mandate the path names (a tester playing
// the bank or the buyer), then sends the notifications it returns, in
// order.
func (m *Main) playBank(w http.ResponseWriter, r *http.Request, change func(*Mandate) (types []string, errCode string)) {
	m.mu.Lock()
	md, ok := m.mandates[r.PathValue("id")]
	if !ok {
		m.mu.Unlock()
		simulator.WriteJSON(w, http.StatusNotFound, apiError{"mandate_not_found"})
		return
	}
	types, code := change(md)
	if code != "" {
		m.mu.Unlock()
		simulator.WriteJSON(w, http.StatusConflict, apiError{code})
		return
	}
	snapshot := *md
	m.mu.Unlock()
	out := mandateResult{Mandate: &snapshot, Deliveries: []delivery{}}
	for _, typ := range types {
		out.Deliveries = append(out.Deliveries, m.notify(r.Context(), snapshot.apiKey, snapshot.notifyURL, typ, snapshot.ID, &snapshot))
	}
	simulator.WriteJSON(w, http.StatusOK, out)
}

// activate is POST /sandbox/mandates/{id}/activate: the bank accepts the
// mandate (mandate.activated) and issues its recurring token
// (recurring.token.created) unless the body says {"recurring_token":
// false}. Activating an active mandate sends its notifications again.
func (m *Main) activate(w http.ResponseWriter, r *http.Request) {
	in := struct {
		RecurringToken *bool `json:"recurring_token"`
	}{}
	if r.ContentLength != 0 && !decode(w, r, &in) {
		return
	}
	m.playBank(w, r, func(md *Mandate) ([]string, string) {
		if md.Status != MandatePending && md.Status != MandateActive {
			return nil, "mandate_" + md.Status
		}
		md.Status = MandateActive
		types := []string{"mandate.activated"}
		if in.RecurringToken == nil || *in.RecurringToken {
			md.RecurringToken = true
			types = append(types, "recurring.token.created")
		}
		return types, ""
	})
}

// recurringToken is POST /sandbox/mandates/{id}/recurring-token: the
// token of an active mandate is issued (again).
func (m *Main) recurringToken(w http.ResponseWriter, r *http.Request) {
	m.playBank(w, r, func(md *Mandate) ([]string, string) {
		if md.Status != MandateActive {
			return nil, "mandate_" + md.Status
		}
		md.RecurringToken = true
		return []string{"recurring.token.created"}, ""
	})
}

// revokeByBank is POST /sandbox/mandates/{id}/revoke: the buyer or the
// bank revokes the mandate (mandate.revoked).
func (m *Main) revokeByBank(w http.ResponseWriter, r *http.Request) {
	m.playBank(w, r, func(md *Mandate) ([]string, string) {
		if md.Status == MandateFailed {
			return nil, "mandate_failed"
		}
		md.Status, md.RecurringToken = MandateRevoked, false
		return []string{"mandate.revoked"}, ""
	})
}

// renotifyDebit is POST /sandbox/debits/{id}/notify: a settled debit's
// result is sent again with the same id, as a processor's retry is.
func (m *Main) renotifyDebit(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	d, ok := m.debits[r.PathValue("id")]
	var snapshot Debit
	if ok {
		snapshot = *d
	}
	m.mu.Unlock()
	switch {
	case !ok:
		simulator.WriteJSON(w, http.StatusNotFound, apiError{"debit_not_found"})
	case snapshot.Status == DebitPending:
		simulator.WriteJSON(w, http.StatusConflict, apiError{"debit_pending"})
	default:
		dl := m.notify(r.Context(), snapshot.apiKey, snapshot.notifyURL, debitType(&snapshot), snapshot.ID, &snapshot)
		simulator.WriteJSON(w, http.StatusOK, map[string]any{"debit": &snapshot, "delivery": dl})
	}
}
