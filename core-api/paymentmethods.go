package coreapi

import (
	"errors"
	"regexp"
	"strconv"
	"time"
)

// Payment method kinds (the `method` field).
const (
	MethodCard     = "card"
	MethodGiftCard = "gift-card"
	MethodBank     = "bank"
	// MethodPix is an instant bank transfer the buyer pays by scanning a
	// QR code: it has no stored payment method.
	MethodPix = "pix"
	// MethodPayPal is a wallet paid through a direct (client SDK)
	// integration: the buyer approves in the wallet's SDK.
	MethodPayPal = "paypal"
)

// VaultProxyKind is the kind vault-proxy records for a payment method of the
// given method (zone.CardMetadata.Kind): a bank account is "bank-account".
func VaultProxyKind(method string) string {
	if method == MethodBank {
		return "bank-account"
	}
	return method
}

// StatusSucceeded is the status of a stored payment method: it was vaulted
// and can be used.
const StatusSucceeded = "succeeded"

// Bank schemes.
const (
	BankSchemeACH  = "ach"
	BankSchemeSEPA = "sepa"
	BankSchemeBACS = "bacs"
)

// Mandate statuses. A mandate is created pending (failed when the bank
// refuses it at once) and activates on the processor's notification
// (mandates.go).
const (
	MandatePending = "pending"
	MandateActive  = "active"
	MandateRevoked = "revoked"
	MandateFailed  = "failed"
)

// PaymentMethod is a stored payment method: a token (its ID, issued by
// vault-proxy) and display data. It never holds a card or account number.
type PaymentMethod struct {
	ID                        string // the vault-proxy token
	MerchantAccountID         string
	Method                    string // MethodCard, MethodGiftCard, MethodBank
	Status                    string
	Scheme                    string // visa, ..., gift-card, ach, sepa, bacs
	Label                     string // last 4
	BIN                       string // cards: first 6 or 8; gift cards: first 6
	CardType                  string
	ExpirationDate            string // MM/YY, "" when none
	Fingerprint               string
	Country                   string // bank
	Currency                  string // bank
	Bank                      *BankDetails
	BuyerID                   string // "" when none
	BuyerExternalIdentifier   string // the buyer's, read with the record
	ExternalIdentifier        *string
	SchemeTransactionID       *string
	SchemeTransactionIDScheme *string
	// SinglePayment: a card given in full with a payment, not stored: it
	// serves that payment (captures, voids, refunds) but is neither listed
	// nor taken for another payment, until the payment stores it.
	SinglePayment        bool
	Usage                Usage
	Mandate              *Mandate // bank, when a recurring mandate was set up
	CreatedAt, UpdatedAt time.Time
}

// GiftCardBalance is a gift card's balance as its processor gave it, or
// why there is none.
type GiftCardBalance struct {
	Balance   *int64 // minor units; nil when it could not be had
	ErrorCode string // why Balance is nil
}

// Usage counts uses of a payment method; transactions record them. Every
// use counts in UsageCount/LastUsedAt; customer-initiated ones (CIT) also
// in CITUsageCount/CITLastUsedAt.
type Usage struct {
	LastUsedAt    *time.Time
	UsageCount    int64
	CITLastUsedAt *time.Time
	CITUsageCount int64
}

// PaymentMethodUse is what an approved authorization records on its
// payment method, in the database transaction that settles it: a use
// (Usage, customer-initiated unless the payment was merchant-initiated),
// and with Store, the payment method stored and the scheme transaction id
// of the authorization, when it has one and the payment was customer-
// initiated (the payment that sets up a card on file or a merchant-
// initiated series), recorded with the payment method's scheme.
type PaymentMethodUse struct {
	At                  time.Time
	CustomerInitiated   bool
	Store               bool
	SchemeTransactionID string
}

// BankDetails are the non-sensitive details of a bank account, as
// vault-proxy passed them on after validating the account.
type BankDetails struct {
	AccountHolderName string `json:"account_holder_name"`
	AccountType       string `json:"account_type,omitempty"`   // ach
	RoutingNumber     string `json:"routing_number,omitempty"` // ach
	SortCode          string `json:"sort_code,omitempty"`      // bacs
	BIC               string `json:"bic,omitempty"`            // sepa
}

// Mandate is a bank debit mandate created through a connector.
type Mandate struct {
	ID                string // the connector's reference
	MerchantAccountID string
	PaymentMethodID   string
	Connector         string
	// PaymentServiceID is the payment service the mandate was set up
	// through, whose configuration its debits, notifications and
	// revocation use; nil: the environment's built-in one.
	PaymentServiceID *string
	Scheme           string
	Status           string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	RevokedAt        *time.Time
	// RecurringTokenAt is when the processor's recurring token arrived:
	// from then on, while active, the mandate can be charged on the
	// merchant's initiative (Usable).
	RecurringTokenAt *time.Time
}

// Active reports whether the mandate must be revoked before its payment
// method goes.
func (m *Mandate) Active() bool {
	return m != nil && (m.Status == MandateActive || m.Status == MandatePending)
}

// PaymentMethodFilter selects payment methods of one merchant account.
type PaymentMethodFilter struct {
	BuyerID string // "" for all
	Method  string // "" for all
}

// Gift card sort orders (GET /buyers/gift-cards?sort_by=): most recent or
// most frequent first, never-used cards last, ties by id.
const (
	SortLastUsedAt    = "last_used_at"
	SortUsageCount    = "usage_count"
	SortCITLastUsedAt = "cit_last_used_at"
	SortCITUsageCount = "cit_usage_count"
)

// GiftCardSorts are the accepted sort_by values.
var GiftCardSorts = []string{SortLastUsedAt, SortUsageCount, SortCITLastUsedAt, SortCITUsageCount}

// ErrExpiryFormat and ErrExpired are the ways an expiration date is wrong.
var (
	ErrExpiryFormat = errors.New("expiration date must be in MM/YY format")
	ErrExpired      = errors.New("expiration date must not be in the past")
)

// CheckExpiry validates an MM/YY expiry that must not be over at now. A
// card is valid through the last day of its expiry month; the check uses
// "anywhere on earth" (UTC-12), the last zone where a month ends, so a
// card is never refused while it is still valid somewhere.
func CheckExpiry(s string, now time.Time) error {
	if len(s) != 5 || s[2] != '/' {
		return ErrExpiryFormat
	}
	mm, err1 := strconv.Atoi(s[:2])
	yy, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || s[0] == '+' || s[0] == '-' || s[3] == '+' || s[3] == '-' || mm < 1 || mm > 12 {
		return ErrExpiryFormat
	}
	t := now.In(time.FixedZone("AoE", -12*3600))
	if 2000+yy < t.Year() || 2000+yy == t.Year() && mm < int(t.Month()) {
		return ErrExpired
	}
	return nil
}

// NewPaymentMethod is the body of POST /payment-methods as core-api accepts
// it: a token (id) that vault-proxy issued, plus, for a bank account, the
// non-sensitive details vault-proxy passes on after validating it. The
// display data of a card (scheme, label, BIN, expiry, fingerprint) is never
// taken from the request: core-api fetches it from vault-proxy by token.
type NewPaymentMethod struct {
	Method                  *string `json:"method"`
	ID                      *string `json:"id"`
	BuyerID                 *string `json:"buyer_id"`
	BuyerExternalIdentifier *string `json:"buyer_external_identifier"`
	ExternalIdentifier      *string `json:"external_identifier"`
	// Stored false keeps the payment method for the one payment it is
	// given with (vault-proxy's card given in full); nil is true.
	Stored *bool `json:"stored"`

	// Bank only (method "bank").
	Scheme            *string         `json:"scheme"`
	Country           *string         `json:"country"`
	Currency          *string         `json:"currency"`
	AccountHolderName *string         `json:"account_holder_name"`
	AccountType       *string         `json:"account_type"`
	RoutingNumber     *string         `json:"routing_number"`
	SortCode          *string         `json:"sort_code"`
	BIC               *string         `json:"bic"`
	Mandate           *MandateOptions `json:"mandate"`
}

// MandateOptions asks for a debit mandate with a bank account.
type MandateOptions struct {
	Recurring bool `json:"recurring"`
}

var (
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	routingPattern  = regexp.MustCompile(`^[0-9]{9}$`)
	sortCodePattern = regexp.MustCompile(`^[0-9]{6}$`)
	bicPattern      = regexp.MustCompile(`^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$`)
	uuidPattern     = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// IsUUID reports whether s is a UUID in canonical lower-case form.
func IsUUID(s string) bool { return uuidPattern.MatchString(s) }

// bankOnly are the fields only a bank payment method takes.
func (n NewPaymentMethod) bankOnly() map[string]bool {
	return map[string]bool{
		"scheme": n.Scheme != nil, "country": n.Country != nil, "currency": n.Currency != nil,
		"account_holder_name": n.AccountHolderName != nil, "account_type": n.AccountType != nil,
		"routing_number": n.RoutingNumber != nil, "sort_code": n.SortCode != nil, "bic": n.BIC != nil,
		"mandate": n.Mandate != nil,
	}
}

// Validate checks the values. The bank details were validated in full by
// vault-proxy (tokenizer/bank); core-api checks their shape again, since
// a request may come to it directly.
func (n NewPaymentMethod) Validate() error {
	var v Problems
	method := ""
	switch {
	case n.Method == nil:
		v.Add("/method", "is required", "value_error.missing")
	case *n.Method != MethodCard && *n.Method != MethodGiftCard && *n.Method != MethodBank:
		v.Add("/method", "must be one of card, gift-card, bank", "value_error.const")
	default:
		method = *n.Method
	}
	switch {
	case n.ID == nil:
		v.Add("/id", "is required: the token vault-proxy issued", "value_error.missing")
	case !IsUUID(*n.ID):
		v.Add("/id", "must be a payment method token (a lower-case UUID)", "value_error.uuid")
	}
	if n.BuyerID != nil && !IsUUID(*n.BuyerID) {
		v.Add("/buyer_id", "must be a buyer id (a lower-case UUID)", "value_error.uuid")
	}
	v.text("/buyer_external_identifier", n.BuyerExternalIdentifier)
	v.text("/external_identifier", n.ExternalIdentifier)

	if method != MethodBank {
		if method != "" {
			for _, f := range []string{"scheme", "country", "currency", "account_holder_name", "account_type", "routing_number", "sort_code", "bic", "mandate"} {
				if n.bankOnly()[f] {
					v.Add("/"+f, "is only accepted for method bank", "value_error.extra")
				}
			}
		}
		return v.Err()
	}

	scheme := ""
	switch {
	case n.Scheme == nil:
		v.Add("/scheme", "is required", "value_error.missing")
	case *n.Scheme != BankSchemeACH && *n.Scheme != BankSchemeSEPA && *n.Scheme != BankSchemeBACS:
		v.Add("/scheme", "must be one of ach, sepa, bacs", "value_error.const")
	default:
		scheme = *n.Scheme
	}
	switch {
	case n.Country == nil:
		v.Add("/country", "is required", "value_error.missing")
	case !ValidCountry(*n.Country):
		v.Add("/country", "must be an ISO 3166-1 alpha-2 code", "value_error.country")
	}
	switch {
	case n.Currency == nil:
		v.Add("/currency", "is required", "value_error.missing")
	case !currencyPattern.MatchString(*n.Currency):
		v.Add("/currency", "must be an ISO 4217 code", "value_error.currency")
	}
	if n.AccountHolderName == nil {
		v.Add("/account_holder_name", "is required", "value_error.missing")
	} else {
		v.text("/account_holder_name", n.AccountHolderName)
	}
	// Each scheme's own fields: required (or optional) for it, refused for the others.
	own := func(p string, val *string, forScheme string, required bool, ok func(string) bool, msg string) {
		switch {
		case scheme == "":
		case scheme != forScheme:
			if val != nil {
				v.Add(p, "is not used by the "+scheme+" scheme", "value_error.extra")
			}
		case val == nil:
			if required {
				v.Add(p, "is required for the "+scheme+" scheme", "value_error.missing")
			}
		case !ok(*val):
			v.Add(p, msg, "value_error.format")
		}
	}
	own("/account_type", n.AccountType, BankSchemeACH, false, func(s string) bool { return s == "checking" || s == "savings" }, "must be checking or savings")
	own("/routing_number", n.RoutingNumber, BankSchemeACH, true, routingPattern.MatchString, "must be 9 digits")
	own("/sort_code", n.SortCode, BankSchemeBACS, true, sortCodePattern.MatchString, "must be 6 digits")
	own("/bic", n.BIC, BankSchemeSEPA, false, bicPattern.MatchString, "must be a BIC of 8 or 11 characters")
	return v.Err()
}

// BankDetails returns the bank details of a valid bank request.
func (n NewPaymentMethod) BankDetails() *BankDetails {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return &BankDetails{AccountHolderName: s(n.AccountHolderName), AccountType: s(n.AccountType),
		RoutingNumber: s(n.RoutingNumber), SortCode: s(n.SortCode), BIC: s(n.BIC)}
}

// PaymentMethodUpdate is the body of PUT /payment-methods/{id}, a partial
// update: absent fields stay, null clears a nullable field.
type PaymentMethodUpdate struct {
	ExpirationDate            Optional[string] `json:"expiration_date"`
	SchemeTransactionID       Optional[string] `json:"scheme_transaction_id"`
	SchemeTransactionIDScheme Optional[string] `json:"scheme_transaction_id_scheme"`
}

// Empty reports whether no field is present.
func (u PaymentMethodUpdate) Empty() bool {
	return !u.ExpirationDate.Set && !u.SchemeTransactionID.Set && !u.SchemeTransactionIDScheme.Set
}

// schemeNamePattern is an open card scheme name: visa, mastercard, amex,
// cartes-bancaires, ...
var schemeNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Validate checks the values; now is for the expiry.
func (u PaymentMethodUpdate) Validate(now time.Time) error {
	var v Problems
	if u.ExpirationDate.Set {
		switch {
		case u.ExpirationDate.Null:
			v.Add("/expiration_date", "cannot be cleared", "type_error.none.not_allowed")
		case CheckExpiry(u.ExpirationDate.Value, now) == ErrExpiryFormat:
			v.Add("/expiration_date", "must be MM/YY", "value_error.expiration_date.format")
		case CheckExpiry(u.ExpirationDate.Value, now) == ErrExpired:
			v.Add("/expiration_date", "must not be in the past", "value_error.expiration_date.expired")
		}
	}
	v.text("/scheme_transaction_id", u.SchemeTransactionID.Ptr())
	if p := u.SchemeTransactionIDScheme.Ptr(); p != nil && !schemeNamePattern.MatchString(*p) {
		v.Add("/scheme_transaction_id_scheme", "must be a scheme name such as visa or mastercard (lower case)", "value_error.str.regex")
	}
	return v.Err()
}

// VaultedRecordsQuery selects a page of the records vault-proxy holds per
// token, for the vault reconciliation.
type VaultedRecordsQuery struct {
	CreatedBefore     time.Time
	MerchantAccountID string // "": every account's
	After             string // "": the first page
	Limit             int    // 0: vault-proxy's default
}
