package coreapi

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// 3-D Secure transaction statuses (EMVCo's transStatus) a scenario's
// outcome names: authentication's, and a challenge's result.
const (
	ThreeDSStatusY       = "Y"       // authenticated
	ThreeDSStatusN       = "N"       // not authenticated
	ThreeDSStatusA       = "A"       // attempted: the issuer did not take part, liability shifts
	ThreeDSStatusR       = "R"       // rejected by the issuer
	ThreeDSStatusU       = "U"       // unavailable
	ThreeDSStatusC       = "C"       // challenge required
	ThreeDSStatusTimeout = "timeout" // the directory server or ACS did not answer
)

// ThreeDSAuthenticationStatuses are what authentication may answer;
// ThreeDSResultStatuses what a challenge may end with.
var (
	ThreeDSAuthenticationStatuses = []string{ThreeDSStatusY, ThreeDSStatusN, ThreeDSStatusA, ThreeDSStatusR, ThreeDSStatusU, ThreeDSStatusC, ThreeDSStatusTimeout}
	ThreeDSResultStatuses         = []string{ThreeDSStatusY, ThreeDSStatusN, ThreeDSStatusTimeout}
)

// ThreeDSVersions are the protocol versions a scenario may answer with;
// the first is the default.
var ThreeDSVersions = []string{"2.2.0", "2.1.0", "2.3.1"}

// ThreeDSScenario is a sandbox 3-D Secure simulator rule: when all its
// conditions hold for a payment, the simulator answers its outcome. A
// merchant account's scenarios are ordered by Priority (1 first); the
// first that matches wins.
type ThreeDSScenario struct {
	ID                string
	MerchantAccountID string
	Priority          int
	Conditions        ThreeDSConditions
	Outcome           ThreeDSOutcome
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// ThreeDSConditions are a scenario's conditions, each nil when not
// given; a scenario with none matches every payment. A card_number
// condition is card data: vault-proxy keeps the number (vaulted, as a
// record no payment method holds) and core-api holds only CardCondition,
// the record's opaque reference with the display data a card may show;
// the simulator, in the PCI zone, compares the numbers.
type ThreeDSConditions struct {
	FirstName          *string               `json:"first_name"`
	LastName           *string               `json:"last_name"`
	EmailAddress       *string               `json:"email_address"` // compared without regard to case
	Amount             *int64                `json:"amount"`
	ExternalIdentifier *string               `json:"external_identifier"`
	CardCondition      *ThreeDSCardCondition `json:"card_condition"`
	BIN                *string               `json:"bin"` // a prefix of the card number, 1 to 8 digits
}

// ThreeDSCardCondition is a card_number condition as core-api knows it:
// ID, the vaulted record vault-proxy keeps the number in (the only
// field vault-proxy passes on), and the card's first 6 digits and last
// 4, which core-api reads from vault-proxy's record, never from a
// request.
type ThreeDSCardCondition struct {
	ID    string `json:"id"`
	BIN   string `json:"bin"`
	Last4 string `json:"last4"`
}

// ThreeDSOutcome is what the simulator answers: the protocol version,
// authentication's status, and when that is C (a challenge) the
// challenge's result.
type ThreeDSOutcome struct {
	Version              string
	AuthenticationStatus string
	ResultStatus         string // "" unless AuthenticationStatus is C
}

// ThreeDSPayment is what a scenario's conditions other than the card's
// are matched against.
type ThreeDSPayment struct {
	FirstName, LastName, EmailAddress string
	Amount                            int64
	ExternalIdentifier                string
	BIN                               string // the card's first 6 or 8 digits
}

// MayMatch reports whether every condition c gives but a card number
// holds for p: a scenario that may match, which only the simulator, with
// the card numbers, decides.
func (c ThreeDSConditions) MayMatch(p ThreeDSPayment) bool {
	eq := func(cond *string, v string) bool { return cond == nil || *cond == v }
	return eq(c.FirstName, p.FirstName) && eq(c.LastName, p.LastName) &&
		(c.EmailAddress == nil || strings.EqualFold(*c.EmailAddress, p.EmailAddress)) &&
		(c.Amount == nil || *c.Amount == p.Amount) &&
		eq(c.ExternalIdentifier, p.ExternalIdentifier) &&
		(c.BIN == nil || (p.BIN != "" && strings.HasPrefix(p.BIN, *c.BIN)))
}

// ThreeDSCandidates are the scenarios, of a merchant account's in
// evaluation order, that may match p: those whose conditions but the
// card's hold, up to the first without a card condition (which matches,
// so none after it can win). The simulator is sent these.
func ThreeDSCandidates(scenarios []ThreeDSScenario, p ThreeDSPayment) []ThreeDSScenario {
	var out []ThreeDSScenario
	for _, s := range scenarios {
		if !s.Conditions.MayMatch(p) {
			continue
		}
		out = append(out, s)
		if s.Conditions.CardCondition == nil {
			break
		}
	}
	return out
}

// ThreeDSScenarioFields are a scenario's create or update: on update an
// absent Conditions or Outcome leaves the stored one alone (a given one
// replaces it whole), and an absent Priority leaves the rule where it is.
type ThreeDSScenarioFields struct {
	Priority   Optional[int]
	Conditions Optional[ThreeDSConditions]
	Outcome    Optional[ThreeDSOutcome]
}

var binPattern = regexp.MustCompile(`^[0-9]{1,8}$`)

// Validate checks f; create says the outcome is required.
func (f ThreeDSScenarioFields) Validate(create bool) error {
	var v Problems
	if f.Priority.Set && (f.Priority.Null || f.Priority.Value < 1) {
		v.Add("/priority", "must be a positive integer", "value_error.number.not_ge")
	}
	if f.Conditions.Null {
		v.Add("/conditions", "must be an object; {} matches every payment", "type_error.object")
	}
	if c := f.Conditions.Ptr(); c != nil {
		c.validate(&v)
	}
	switch o := f.Outcome.Ptr(); {
	case o == nil && (create || f.Outcome.Set):
		v.Add("/outcome", "is required", "value_error.missing")
	case o != nil:
		o.validate(&v)
	}
	return v.Err()
}

func (c *ThreeDSConditions) validate(v *Problems) {
	v.text("/conditions/first_name", c.FirstName)
	v.text("/conditions/last_name", c.LastName)
	if c.EmailAddress != nil && (len(*c.EmailAddress) == 0 || len(*c.EmailAddress) > 320) {
		v.Add("/conditions/email_address", "must be 1 to 320 characters", "value_error.any_str.max_length")
	}
	if c.Amount != nil && *c.Amount < 0 {
		v.Add("/conditions/amount", "must be a non-negative integer in minor units", "value_error.number.not_ge")
	}
	v.text("/conditions/external_identifier", c.ExternalIdentifier)
	if c.BIN != nil && !binPattern.MatchString(*c.BIN) {
		v.Add("/conditions/bin", "must be 1 to 8 digits, a prefix of the card number", "value_error.bin")
	}
	if c.CardCondition != nil && uuid.Validate(c.CardCondition.ID) != nil {
		v.Add("/conditions/card_condition/id", "must be the reference vault-proxy gave a card_number condition", "value_error.card_condition")
	}
}

func (o *ThreeDSOutcome) validate(v *Problems) {
	if o.Version != "" && !slices.Contains(ThreeDSVersions, o.Version) {
		v.Add("/outcome/version", "must be one of "+strings.Join(ThreeDSVersions, ", "), "value_error.const")
	}
	if !slices.Contains(ThreeDSAuthenticationStatuses, o.AuthenticationStatus) {
		v.Add("/outcome/authentication/transaction_status", "must be one of "+strings.Join(ThreeDSAuthenticationStatuses, ", "), "value_error.const")
		return
	}
	switch {
	case o.AuthenticationStatus == ThreeDSStatusC && o.ResultStatus == "":
		v.Add("/outcome/result/transaction_status", "is required when authentication's transaction_status is C (a challenge)", "value_error.missing")
	case o.AuthenticationStatus == ThreeDSStatusC && !slices.Contains(ThreeDSResultStatuses, o.ResultStatus):
		v.Add("/outcome/result/transaction_status", "must be one of "+strings.Join(ThreeDSResultStatuses, ", "), "value_error.const")
	case o.AuthenticationStatus != ThreeDSStatusC && o.ResultStatus != "":
		v.Add("/outcome/result", "is given only when authentication's transaction_status is C (a challenge)", "value_error.unexpected")
	}
}

// 3-D Secure authentication methods: without the buyer, or through a
// challenge the buyer completed.
const (
	ThreeDSMethodFrictionless = "frictionless"
	ThreeDSMethodChallenge    = "challenge"
)

// NewThreeDSecure is a payment's request for 3-D Secure: the amount to
// authenticate, which may exceed the transaction's (a split shipment
// authenticated once) but never be below it (ErrThreeDSAmountTooLow).
type NewThreeDSecure struct {
	Amount int64
}

// ThreeDSecure is the summary of a transaction's 3-D Secure
// authentication, as the transaction carries it. Status is
// authentication's transaction status and, once a challenge is
// completed, the challenge's result. ChallengeResult (and ChallengeData)
// is what completing a pending challenge gives (the simulator decided it
// up front); it is the service's, never shown.
type ThreeDSecure struct {
	Version         string               `json:"version"`
	Status          string               `json:"status"`
	Method          string               `json:"method"`
	Amount          int64                `json:"amount"`
	ResponseData    *ThreeDSResponseData `json:"response_data,omitempty"`
	ChallengeResult string               `json:"challenge_result,omitempty"`
	// ChallengeData is the authentication data a challenge's Y gives,
	// as the simulator answered it with the challenge; never shown.
	ChallengeData *ThreeDSResponseData `json:"challenge_data,omitempty"`
	// ChallengeOptions are the payment's connection options for its card
	// connector (its entry, as validated), kept while a challenge waits
	// for the authorization that follows it; never shown. They are no
	// card data.
	ChallengeOptions json.RawMessage `json:"challenge_options,omitempty"`
}

// ThreeDSResponseData is what an authentication gives the authorization:
// the cardholder authentication verification value (base64, 28
// characters) and the electronic commerce indicator.
type ThreeDSResponseData struct {
	CAVV string `json:"cavv"`
	ECI  string `json:"eci"`
}

// ErrThreeDSAmountTooLow is a three_d_secure.amount below the
// transaction's amount: it would not cover the payment (422).
var ErrThreeDSAmountTooLow = errors.New("three_d_secure.amount is below the transaction's amount")

// ErrThreeDSUnavailable is a payment asking for 3-D Secure where no
// 3-D Secure connector is configured (production has none yet).
var ErrThreeDSUnavailable = errors.New("no 3-D Secure connector is configured")

// Error codes of a transaction that 3-D Secure ended before its
// authorization (docs/three-d-secure.md).
const (
	ErrorCodeThreeDSNotAuthenticated = "three_d_secure_not_authenticated" // N
	ErrorCodeThreeDSRejected         = "three_d_secure_rejected"          // R
	ErrorCodeThreeDSUnavailable      = "three_d_secure_unavailable"       // U
	ErrorCodeThreeDSTimeout          = "three_d_secure_timeout"           // no answer
	ErrorCodeThreeDSChallengeFailed  = "three_d_secure_challenge_failed"  // a challenge's N
	ErrorCodeThreeDSChallengeTimeout = "three_d_secure_challenge_timeout" // a challenge not completed in time
	ErrorCodeThreeDSError            = "three_d_secure_error"             // the 3-D Secure connector failed
)
