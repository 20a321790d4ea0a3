package mockcard

import (
	"strconv"
	"strings"
	"time"

	"github.com/payorch/shared/cardscheme"
	"github.com/payorch/tokenizer/card"
)

// Special amounts (minor units) that change what happens to the answer
// rather than what the issuer says.
const (
	// AmountHeld is approved and recorded at once, but its answer is held
	// for Config.Hold, longer than any client waits: the client times out
	// and must find the charge by its idempotency key.
	AmountHeld = 4098
	// AmountProcessorError answers 500 processor_error and records
	// nothing.
	AmountProcessorError = 4099
)

// maxAmount keeps an amount to 11 digits: a 12-19 digit number that
// passes the Luhn check is taken for a card number and masked by
// vault-proxy in the answer core-api gets.
const maxAmount = 99_999_999_999

// approvedCode is the response code of an approval.
const approvedCode = "00"

// response is one raw response code of the simulated issuer.
type response struct {
	code        string // ISO 8583 field 39
	declineCode string
	message     string
	// failed: the processor failed, the issuer decided nothing (status
	// failed rather than declined, and no AVS or CVV result).
	failed bool
}

// declines are the refusals the simulator gives, by ISO 8583 response
// code. An amount of 40xx (minor units) answers the row whose code is xx:
// 4051 is "51" insufficient_funds. docs/sandbox/mock-card.md has the table.
var declines = []response{
	{"01", "issuer_decline", "Refer to card issuer", false},
	{"04", "pick_up_card", "Pick up card", false},
	{"05", "do_not_honor", "Do not honour", false},
	{"12", "invalid_transaction", "Invalid transaction", false},
	{"13", "invalid_amount", "Invalid amount", false},
	{"14", "invalid_number", "Invalid card number", false},
	{"41", "lost_card", "Lost card, pick up", false},
	{"43", "stolen_card", "Stolen card, pick up", false},
	{"51", "insufficient_funds", "Not sufficient funds", false},
	{"54", "expired_card", "Expired card", false},
	{"57", "transaction_not_permitted", "Transaction not permitted to cardholder", false},
	{"59", "suspected_fraud", "Suspected fraud", false},
	{"61", "exceeds_amount_limit", "Exceeds withdrawal amount limit", false},
	{"62", "restricted_card", "Restricted card", false},
	{"65", "exceeds_frequency_limit", "Exceeds withdrawal frequency limit", false},
	{"82", "incorrect_cvv", "Negative CVV result", false},
	{"91", "issuer_unavailable", "Issuer or switch inoperative", false},
	{"96", "processing_error", "System malfunction", true},
}

// Response codes the simulator gives for what the card says.
const (
	codeInvalidNumber = "14"
	codeExpired       = "54"
	codeIncorrectCVV  = "82"
)

// noPreviousTransaction declines a merchant-initiated payment that does
// not name the scheme transaction id of the payment that set it up, as
// schemes require: without it the issuer cannot tell the payment from a
// card-not-present charge nobody authorized. Its code is "12" (invalid
// transaction); its decline code says what is missing. Not an amount's.
var noPreviousTransaction = response{"12", "previous_scheme_transaction_id_required",
	"Invalid transaction: no scheme transaction id of the payment that set up the merchant-initiated series", false}

// amountBase is added to a response code to make its amount.
const amountBase = 4000

var (
	declineByCode   = map[string]response{}
	declineByAmount = map[int64]response{}
)

func init() {
	for _, r := range declines {
		n, _ := strconv.Atoi(r.code)
		declineByCode[r.code] = r
		declineByAmount[amountBase+int64(n)] = r
	}
}

// verdict is what the simulated processor and issuer answer to one
// authorization request.
type verdict struct {
	approved bool
	response response
	avs, cvv *string // nil: nothing to check (not sent), or not checked
	scheme   cardscheme.Scheme
	held     bool // AmountHeld: the answer waits
	pending  bool // a pending amount: answered pending, decided by notification
}

// decide is the simulated issuer: the card first (its number, its expiry),
// a merchant-initiated payment's reference to the first, the test cards'
// table, then the amount. req has passed validate.
func decide(req *authorizeRequest, now time.Time) verdict {
	v := verdict{scheme: cardscheme.Detect(req.Card.Number), held: req.Amount == AmountHeld}
	switch {
	case !cardscheme.Luhn(req.Card.Number):
		v.response = declineByCode[codeInvalidNumber]
	case expired(req.Card.ExpiryMonth, req.Card.ExpiryYear, now):
		v.response = declineByCode[codeExpired]
	case req.MerchantInitiated && req.PreviousSchemeTransactionID == "":
		v.response = noPreviousTransaction
	default:
		if tc, ok := card.LookupTestCard([]byte(req.Card.Number)); ok && tc.ProcessorDecline != "" {
			v.response = declineByCode[tc.ProcessorDecline]
		} else if r, ok := declineByAmount[req.Amount]; ok {
			v.response = r
		} else if r, ok := pendingResult(req.Amount); ok {
			v.pending, v.response, v.approved = true, r, r.code == approvedCode
		} else {
			v.approved = true
			v.response = response{code: approvedCode, message: "Approved"}
		}
	}
	if v.response.failed {
		return v
	}
	v.avs = avsResult(req.Billing)
	v.cvv = cvvResult(req.Card.SecurityCode)
	if v.cvv != nil && v.response.code == codeIncorrectCVV {
		v.cvv = ptr("N")
	}
	return v
}

// expired reports whether the card's expiry month is over at now, in UTC.
// month and year have passed validate.
func expired(month, year string, now time.Time) bool {
	m, y := atoi(month), atoi(year)
	now = now.UTC()
	return y < now.Year() || (y == now.Year() && m < int(now.Month()))
}

// avsPostalCodes are the postal codes with an AVS result other than Y.
var avsPostalCodes = map[string]string{
	"11111": "N", // no match
	"22222": "U", // unavailable
	"33333": "R", // retry: the issuer's system is unavailable
	"44444": "S", // AVS not supported
}

func avsResult(b *billing) *string {
	if b == nil || strings.TrimSpace(b.PostalCode) == "" {
		return nil
	}
	if r, ok := avsPostalCodes[strings.TrimSpace(b.PostalCode)]; ok {
		return ptr(r)
	}
	return ptr("Y")
}

// cvvCodes are the security codes with a CVV result other than M.
var cvvCodes = map[string]string{
	"111": "N", "1111": "N", // no match
	"222": "U", "2222": "U", // the issuer cannot check
	"333": "P", "3333": "P", // not processed
}

func cvvResult(code string) *string {
	if code == "" {
		return nil
	}
	if r, ok := cvvCodes[code]; ok {
		return ptr(r)
	}
	return ptr("M")
}

func ptr[T any](v T) *T { return &v }
