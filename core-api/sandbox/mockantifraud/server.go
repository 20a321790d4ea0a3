package mockantifraud

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/payorch/shared/simulator"
)

// Decisions, as v2.1 names them; v10.2 answers APPROVE, DECLINE and
// REVIEW (Recommendation).
const (
	DecisionAccept = "accept"
	DecisionReject = "reject"
	DecisionReview = "review"
)

// The API versions and their routes.
const (
	Version21  = "v2.1"
	Version102 = "v10.2"
	Path21     = "/v2.1/decisions"
	Path102    = "/v10.2/assessments"
)

// Request is one request received, as recorded.
type Request struct {
	Version string          `json:"version"`
	Path    string          `json:"path"`
	APIKey  string          `json:"api_key"`
	Body    json.RawMessage `json:"body"`
}

// Recorder keeps the requests received, oldest first, at most max.
type Recorder struct {
	max  int
	mu   sync.Mutex
	reqs []Request
}

func (r *Recorder) add(q Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, q)
	if over := len(r.reqs) - r.max; over > 0 {
		r.reqs = append([]Request(nil), r.reqs[over:]...)
	}
}

// All returns the requests received, oldest first.
func (r *Recorder) All() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Request21 is the body of POST /v2.1/decisions: flat, amounts in minor
// units.
type Request21 struct {
	OrderID   string   `json:"order_id"`
	Amount    int64    `json:"amount"`
	Currency  string   `json:"currency"`
	SessionID string   `json:"session_id"`
	CardBIN   string   `json:"card_bin"`
	CardBrand string   `json:"card_brand"`
	Email     string   `json:"email"`
	FirstName string   `json:"first_name"`
	LastName  string   `json:"last_name"`
	Country   string   `json:"billing_country"`
	Postcode  string   `json:"billing_postal_code"`
	Items     []Item21 `json:"items"`
}

// Item21 is a v2.1 cart line.
type Item21 struct {
	Name      string `json:"name"`
	Quantity  int64  `json:"quantity"`
	UnitPrice int64  `json:"unit_price"`
	SKU       string `json:"sku,omitempty"`
}

// Response21 is v2.1's answer.
type Response21 struct {
	Decision string `json:"decision"`
	Score    int    `json:"score"`
}

// Request102 is the body of POST /v10.2/assessments: nested.
type Request102 struct {
	Transaction struct {
		Reference string `json:"reference"`
		Amount    struct {
			MinorUnits int64  `json:"minor_units"`
			Currency   string `json:"currency"`
		} `json:"amount"`
	} `json:"transaction"`
	Device struct {
		Fingerprint string `json:"fingerprint"`
	} `json:"device"`
	PaymentMethod struct {
		Type    string `json:"type"`
		BIN     string `json:"bin"`
		Network string `json:"network"`
	} `json:"payment_method"`
	Purchaser struct {
		Name struct {
			Given  string `json:"given"`
			Family string `json:"family"`
		} `json:"name"`
		Email   string `json:"email"`
		Address struct {
			Country    string `json:"country"`
			PostalCode string `json:"postal_code"`
		} `json:"address"`
	} `json:"purchaser"`
	Cart struct {
		Lines []Line102 `json:"lines"`
	} `json:"cart"`
}

// Line102 is a v10.2 cart line.
type Line102 struct {
	Description     string `json:"description"`
	Qty             int64  `json:"qty"`
	UnitAmountMinor int64  `json:"unit_amount_minor"`
	ProductID       string `json:"product_id,omitempty"`
}

// Response102 is v10.2's answer.
type Response102 struct {
	Assessment struct {
		Recommendation string  `json:"recommendation"` // APPROVE, DECLINE, REVIEW
		RiskScore      float64 `json:"risk_score"`
	} `json:"assessment"`
}

var recommendations = map[string]string{DecisionAccept: "APPROVE", DecisionReject: "DECLINE", DecisionReview: "REVIEW"}

// decide is the sandbox's rule: the device session, then the e-mail's
// local part, naming "reject", "review" or "error" (a 500 answer) decide;
// anything else is accepted. ok false is the error.
func decide(deviceSession, email string) (decision string, ok bool) {
	local, _, _ := strings.Cut(strings.ToLower(email), "@")
	for _, s := range []string{strings.ToLower(deviceSession), local} {
		switch {
		case strings.Contains(s, "error"):
			return "", false
		case strings.Contains(s, DecisionReject):
			return DecisionReject, true
		case strings.Contains(s, DecisionReview):
			return DecisionReview, true
		}
	}
	return DecisionAccept, true
}

var scores = map[string]int{DecisionAccept: 8, DecisionReview: 55, DecisionReject: 97}

type server struct {
	rec *Recorder
}

func newServer(rec *Recorder) http.Handler {
	s := &server{rec: rec}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Path21, s.v21)
	mux.HandleFunc("POST "+Path102, s.v102)
	mux.HandleFunc("GET /sandbox/requests", s.requests)
	mux.HandleFunc("GET /healthz", simulator.Healthz)
	return mux
}

// read authenticates and records a request, and decodes its body
// strictly into dst; false when it answered a refusal.
func (s *server) read(w http.ResponseWriter, r *http.Request, version string, dst any) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		simulator.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": "an API key is required (Authorization: Bearer ...)"})
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		simulator.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad_request", "message": "the body could not be read"})
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		simulator.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "bad_request", "message": "the body is not a valid " + version + " request"})
		return false
	}
	s.rec.add(Request{Version: version, Path: r.URL.Path, APIKey: key, Body: json.RawMessage(body)})
	return true
}

func (s *server) v21(w http.ResponseWriter, r *http.Request) {
	var in Request21
	if !s.read(w, r, Version21, &in) {
		return
	}
	d, ok := decide(in.SessionID, in.Email)
	if !ok {
		simulator.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal_error", "message": "the sandbox answers an error for this device session"})
		return
	}
	simulator.WriteJSON(w, http.StatusOK, Response21{Decision: d, Score: scores[d]})
}

func (s *server) v102(w http.ResponseWriter, r *http.Request) {
	var in Request102
	if !s.read(w, r, Version102, &in) {
		return
	}
	d, ok := decide(in.Device.Fingerprint, in.Purchaser.Email)
	if !ok {
		simulator.WriteJSON(w, http.StatusInternalServerError, map[string]any{"errors": []map[string]string{{"code": "INTERNAL", "detail": "the sandbox answers an error for this device session"}}})
		return
	}
	var out Response102
	out.Assessment.Recommendation, out.Assessment.RiskScore = recommendations[d], float64(scores[d])/100
	simulator.WriteJSON(w, http.StatusOK, out)
}

func (s *server) requests(w http.ResponseWriter, _ *http.Request) {
	simulator.WriteJSON(w, http.StatusOK, map[string]any{"items": s.rec.All()})
}
