package coreapi

import (
	"time"
	"unicode/utf8"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/logging/panscan"
)

// MerchantAccount is a tenant: every other record belongs to one.
type MerchantAccount struct {
	ID          string // accountid.Pattern, chosen by the creator, immutable
	DisplayName string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewMerchantAccount is the body of POST /merchant-accounts.
type NewMerchantAccount struct {
	ID          *string `json:"id"`
	DisplayName *string `json:"display_name"`
}

// Validate checks the values; both fields are required.
func (n NewMerchantAccount) Validate() error {
	var v Problems
	switch {
	case n.ID == nil:
		v.Add("/id", "is required", "value_error.missing")
	case !accountid.Valid(*n.ID):
		v.Add("/id", "must be 1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit", "value_error.str.regex")
	case panscan.InIdentifier(*n.ID):
		// The id goes into every URL, log line and audit row of the
		// account: "a<card number>a" must not carry a card number
		// there, though free text with it would pass panscan.Contains.
		v.Add("/id", "looks like a card number", "value_error.card_data")
	}
	validateDisplayName(&v, n.DisplayName, true)
	return v.Err()
}

// MerchantAccountUpdate is the body of PUT /merchant-accounts/{id}: only
// display_name can change, and it cannot be cleared.
type MerchantAccountUpdate struct {
	DisplayName Optional[string] `json:"display_name"`
}

// Validate checks the values.
func (u MerchantAccountUpdate) Validate() error {
	var v Problems
	if u.DisplayName.Set && u.DisplayName.Null {
		v.Add("/display_name", "cannot be cleared", "type_error.none.not_allowed")
	}
	validateDisplayName(&v, u.DisplayName.Ptr(), false)
	return v.Err()
}

func validateDisplayName(v *Problems, s *string, required bool) {
	if s == nil {
		if required {
			v.Add("/display_name", "is required", "value_error.missing")
		}
		return
	}
	if n := utf8.RuneCountInString(*s); n < MinTextLen || n > MaxTextLen {
		v.Add("/display_name", "must be 1 to 200 characters", "value_error.any_str.length")
	}
}
