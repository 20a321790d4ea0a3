package coreapi

import (
	"net/mail"
	"regexp"
	"time"
	"unicode/utf8"
)

// Buyer is a merchant's customer (docs/api-conventions.md, "Buyers").
type Buyer struct {
	ID                 string // UUID
	MerchantAccountID  string
	DisplayName        *string
	ExternalIdentifier *string // unique within the merchant account
	AccountNumber      *string
	BillingDetails     *BillingDetails
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// BillingDetails is a buyer's billing name, contact, address and tax id.
// Every field is optional; nil is written as null. It is stored as given
// (jsonb) and replaced as a whole by an update.
type BillingDetails struct {
	FirstName    *string  `json:"first_name"`
	LastName     *string  `json:"last_name"`
	EmailAddress *string  `json:"email_address"`
	PhoneNumber  *string  `json:"phone_number"` // E.164
	Address      *Address `json:"address"`
	TaxID        *TaxID   `json:"tax_id"`
}

// Address is a postal address.
type Address struct {
	City              *string `json:"city"`
	Country           *string `json:"country"` // ISO 3166-1 alpha-2
	PostalCode        *string `json:"postal_code"`
	State             *string `json:"state"`
	StateCode         *string `json:"state_code"` // ISO 3166-2: <country>-<subdivision>
	HouseNumberOrName *string `json:"house_number_or_name"`
	Line1             *string `json:"line1"`
	Line2             *string `json:"line2"`
	Organization      *string `json:"organization"`
}

// TaxID is a tax identifier.
type TaxID struct {
	Value *string `json:"value"` // required when tax_id is given
}

// BuyerFields is the body of a create or a partial update. On create, null
// and absent both leave a field empty; on update, absent leaves the stored
// value and null clears it. billing_details is replaced as a whole.
type BuyerFields struct {
	DisplayName        Optional[string]         `json:"display_name"`
	ExternalIdentifier Optional[string]         `json:"external_identifier"`
	AccountNumber      Optional[string]         `json:"account_number"`
	BillingDetails     Optional[BillingDetails] `json:"billing_details"`
}

// Empty reports whether no field is present.
func (f BuyerFields) Empty() bool {
	return !f.DisplayName.Set && !f.ExternalIdentifier.Set && !f.AccountNumber.Set && !f.BillingDetails.Set
}

// BuyerFilter narrows a buyer list.
type BuyerFilter struct {
	Search             string // case-insensitive substring of display_name or external_identifier; "" for none
	ExternalIdentifier string // exact; "" for none
}

// Text limits (docs/api-conventions.md, "Buyers"): counted in characters
// (runes).
const (
	MinTextLen  = 1
	MaxTextLen  = 200
	maxEmailLen = 254
)

var (
	phoneRE     = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	stateCodeRE = regexp.MustCompile(`^([A-Z]{2})-([A-Z0-9]{1,3})$`)
)

// Validate checks every value rule and reports all problems at once.
func (f BuyerFields) Validate() error {
	var v Problems
	v.text("/display_name", f.DisplayName.Ptr())
	v.text("/external_identifier", f.ExternalIdentifier.Ptr())
	v.text("/account_number", f.AccountNumber.Ptr())
	if bd := f.BillingDetails.Ptr(); bd != nil {
		bd.validate(&v, "/billing_details")
	}
	return v.Err()
}

func (b *BillingDetails) validate(v *Problems, p string) {
	v.text(p+"/first_name", b.FirstName)
	v.text(p+"/last_name", b.LastName)
	if e := b.EmailAddress; e != nil {
		if a, err := mail.ParseAddress(*e); err != nil || a.Name != "" || a.Address != *e || len(*e) > maxEmailLen {
			v.Add(p+"/email_address", "must be a plain e-mail address such as name@example.com", "value_error.email")
		}
	}
	if n := b.PhoneNumber; n != nil && !phoneRE.MatchString(*n) {
		v.Add(p+"/phone_number", "must be in E.164 format: + and 7 to 15 digits, such as +14155550100", "value_error.phone_number")
	}
	if a := b.Address; a != nil {
		ap := p + "/address"
		for _, f := range []struct {
			name string
			s    *string
		}{
			{"city", a.City}, {"postal_code", a.PostalCode}, {"state", a.State},
			{"house_number_or_name", a.HouseNumberOrName}, {"line1", a.Line1}, {"line2", a.Line2},
			{"organization", a.Organization},
		} {
			v.text(ap+"/"+f.name, f.s)
		}
		if c := a.Country; c != nil && !ValidCountry(*c) {
			v.Add(ap+"/country", "must be an ISO 3166-1 alpha-2 country code in upper case, such as US", "value_error.country_code")
		}
		if sc := a.StateCode; sc != nil {
			m := stateCodeRE.FindStringSubmatch(*sc)
			switch {
			case m == nil || !ValidCountry(m[1]):
				v.Add(ap+"/state_code", "must be <country>-<subdivision>, such as US-CA", "value_error.state_code")
			case a.Country != nil && ValidCountry(*a.Country) && m[1] != *a.Country:
				v.Add(ap+"/state_code", "country part must equal address.country", "value_error.state_code.country_mismatch")
			}
		}
	}
	if t := b.TaxID; t != nil {
		if t.Value == nil {
			v.Add(p+"/tax_id/value", "is required", "value_error.missing")
		} else {
			v.text(p+"/tax_id/value", t.Value)
		}
	}
}

// Problem is one invalid value, pointed at by an RFC 6901 pointer into the
// request body.
type Problem struct {
	Pointer string
	Message string
	Type    string
}

// Problems collects validation problems.
type Problems []Problem

// Add records a problem.
func (v *Problems) Add(pointer, message, typ string) {
	*v = append(*v, Problem{Pointer: pointer, Message: message, Type: typ})
}

func (v *Problems) text(pointer string, s *string) {
	if s == nil {
		return
	}
	switch n := utf8.RuneCountInString(*s); {
	case n < MinTextLen:
		v.Add(pointer, "must be at least 1 character", "value_error.any_str.min_length")
	case n > MaxTextLen:
		v.Add(pointer, "must be at most 200 characters", "value_error.any_str.max_length")
	}
}

// Err is nil without problems, else a *ValidationError.
func (v Problems) Err() error {
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Problems: v}
}

// ValidationError is a request whose values break the rules (400).
type ValidationError struct {
	Problems Problems
}

func (e *ValidationError) Error() string { return "invalid values" }
