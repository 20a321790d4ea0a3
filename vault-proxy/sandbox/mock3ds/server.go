package mock3ds

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/payorch/tokenizer/card"
)

// AuthenticationsPath is where an authentication request is sent.
const AuthenticationsPath = "/v1/authentications"

// Request is the body of POST /v1/authentications: the payment, its
// card, and the merchant's candidate scenarios in evaluation order.
type Request struct {
	Amount            int64      `json:"amount"` // the amount to authenticate
	Currency          string     `json:"currency"`
	TransactionAmount int64      `json:"transaction_amount"`
	ExternalID        string     `json:"external_identifier,omitempty"`
	Card              Card       `json:"card"`
	Buyer             Buyer      `json:"buyer"`
	Scenarios         []Scenario `json:"scenarios"`
}

// Card is the payment's card.
type Card struct {
	Number string `json:"number"`
}

// Buyer is the buyer's billing details.
type Buyer struct {
	FirstName    string `json:"first_name,omitempty"`
	LastName     string `json:"last_name,omitempty"`
	EmailAddress string `json:"email_address,omitempty"`
}

// Scenario is one rule: all its conditions given must hold.
type Scenario struct {
	ID         string     `json:"id"`
	Conditions Conditions `json:"conditions"`
	Outcome    Outcome    `json:"outcome"`
}

// Conditions are a scenario's conditions; nil is not a condition.
type Conditions struct {
	FirstName          *string `json:"first_name,omitempty"`
	LastName           *string `json:"last_name,omitempty"`
	EmailAddress       *string `json:"email_address,omitempty"` // without regard to case
	Amount             *int64  `json:"amount,omitempty"`        // the transaction's amount
	ExternalIdentifier *string `json:"external_identifier,omitempty"`
	CardNumber         *string `json:"card_number,omitempty"`
	BIN                *string `json:"bin,omitempty"` // a prefix of the card number
}

// Status is {"transaction_status": ...}.
type Status struct {
	TransactionStatus string `json:"transaction_status"`
}

// Outcome is what a scenario answers.
type Outcome struct {
	Version        string  `json:"version"`
	Authentication Status  `json:"authentication"`
	Result         *Status `json:"result,omitempty"` // a challenge's (authentication C)
}

// Answer is the answer to an authentication.
type Answer struct {
	Type              string     `json:"type"` // "authentication"
	ScenarioID        *string    `json:"scenario_id"`
	Version           string     `json:"version"`
	TransactionStatus string     `json:"transaction_status"`
	Result            *Result    `json:"result"`    // Y, A
	Challenge         *Challenge `json:"challenge"` // C
}

// Result is an authenticated buyer's data for the authorization.
type Result struct {
	AuthenticationValue string `json:"authentication_value"` // the CAVV
	ECI                 string `json:"eci"`
}

// Challenge is what completing the challenge gives: its status and,
// when that is Y, its authentication data.
type Challenge struct {
	TransactionStatus string  `json:"transaction_status"`
	Result            *Result `json:"result"`
}

var (
	authStatuses   = []string{"Y", "N", "A", "R", "U", "C", "timeout"}
	resultStatuses = []string{"Y", "N", "timeout"}
)

// Handler serves mock-3ds's routes.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("POST "+AuthenticationsPath, authenticate)
	return mux
}

func authenticate(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	// The body holds card numbers: cleared once read.
	defer clear(b)
	var in Request
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "the body is not an authentication request")
		return
	}
	n, err := card.ParseNumber(in.Card.Number)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_card", "card.number is not a card number")
		return
	}
	defer n.Zero()
	pan := string(n.Reveal())
	for _, s := range in.Scenarios {
		o := s.Outcome
		if !slices.Contains(authStatuses, o.Authentication.TransactionStatus) ||
			(o.Authentication.TransactionStatus == "C") != (o.Result != nil) ||
			(o.Result != nil && !slices.Contains(resultStatuses, o.Result.TransactionStatus)) {
			writeError(w, http.StatusBadRequest, "invalid_scenario", "scenario "+s.ID+" has no valid outcome")
			return
		}
	}
	scheme := string(n.Scheme())
	out := Answer{Type: "authentication", Version: "2.2.0", TransactionStatus: "Y"}
	if s := first(in, pan); s != nil {
		out.ScenarioID, out.TransactionStatus = &s.ID, s.Outcome.Authentication.TransactionStatus
		if s.Outcome.Version != "" {
			out.Version = s.Outcome.Version
		}
		if s.Outcome.Result != nil {
			out.Challenge = &Challenge{TransactionStatus: s.Outcome.Result.TransactionStatus, Result: data(scheme, s.Outcome.Result.TransactionStatus)}
		}
	}
	out.Result = data(scheme, out.TransactionStatus)
	writeJSON(w, http.StatusOK, out)
}

// first is the first scenario whose conditions hold for the payment of
// card number pan, or nil.
func first(in Request, pan string) *Scenario {
	eq := func(c *string, v string) bool { return c == nil || *c == v }
	for i := range in.Scenarios {
		c := in.Scenarios[i].Conditions
		if eq(c.FirstName, in.Buyer.FirstName) && eq(c.LastName, in.Buyer.LastName) &&
			(c.EmailAddress == nil || strings.EqualFold(*c.EmailAddress, in.Buyer.EmailAddress)) &&
			(c.Amount == nil || *c.Amount == in.TransactionAmount) &&
			eq(c.ExternalIdentifier, in.ExternalID) &&
			(c.CardNumber == nil || sameCard(*c.CardNumber, pan)) &&
			(c.BIN == nil || strings.HasPrefix(pan, *c.BIN)) {
			return &in.Scenarios[i]
		}
	}
	return nil
}

// sameCard compares a condition's number, as vault-proxy wrote it in,
// with the payment's.
func sameCard(cond, pan string) bool {
	n, err := card.ParseNumber(cond)
	if err != nil {
		return false
	}
	defer n.Zero()
	return string(n.Reveal()) == pan
}

// data is the authentication data of status for a card of scheme: a mock
// CAVV (20 random bytes in base64, 28 characters) and the scheme's ECI,
// for an authenticated (Y) or attempted (A) buyer; nil otherwise.
func data(scheme, status string) *Result {
	if status != "Y" && status != "A" {
		return nil
	}
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return &Result{AuthenticationValue: base64.StdEncoding.EncodeToString(b), ECI: ECI(scheme, status)}
}

// ECI is the electronic commerce indicator of an authentication with
// status for a card of scheme: Mastercard (and Maestro) 02 authenticated,
// 01 attempted, 00 otherwise; Visa and the other schemes 05, 06 and 07.
func ECI(scheme, status string) string {
	eci := [3]string{"05", "06", "07"}
	if scheme == string(card.SchemeMastercard) || scheme == string(card.SchemeMaestro) {
		eci = [3]string{"02", "01", "00"}
	}
	switch status {
	case "Y":
		return eci[0]
	case "A":
		return eci[1]
	}
	return eci[2]
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"type": "error", "code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
