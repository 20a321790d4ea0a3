package card

// Fields named by FieldError.Field: the request field names of
// POST /payment-methods with method "card".
const (
	FieldNumber         = "number"
	FieldExpirationDate = "expiration_date"
	FieldSecurityCode   = "security_code"
)

// Codes in FieldError.Code. They are stable snake_case words a client can
// switch on; add new ones, never rename.
const (
	// CodeRequired: the field is empty (or, for a number, only spaces).
	CodeRequired = "required"
	// CodeInvalidCharacters: the number holds something other than ASCII
	// digits, spaces and dashes (letters, tabs, non-ASCII digits, ...).
	CodeInvalidCharacters = "invalid_characters"
	// CodeInvalidFormat: the number's separators are misplaced (doubled,
	// leading or trailing dash), or the expiry is not exactly MM/YY.
	CodeInvalidFormat = "invalid_format"
	// CodeInvalidLength: the number does not have 12 to 19 digits.
	CodeInvalidLength = "invalid_length"
	// CodeLuhnCheckFailed: the number's check digit is wrong.
	CodeLuhnCheckFailed = "luhn_check_failed"
	// CodeInvalidMonth: the expiry month is not 01 to 12.
	CodeInvalidMonth = "invalid_month"
	// CodeExpired: the expiry month is over (see Expiry.Expired).
	CodeExpired = "expired"
	// CodeInvalidSecurityCode: the security code is not 3 digits (4 for
	// amex; 3 or 4 when the scheme is unknown).
	CodeInvalidSecurityCode = "invalid_security_code"
)

// FieldError is a validation failure of one card field. Message is written
// for the API client and is safe to return as is: no FieldError ever quotes
// the input it rejects.
//
// Parse functions return it as an error value; use errors.As with a
// FieldError (not a pointer) target to get it back.
type FieldError struct {
	Field   string // FieldNumber, FieldExpirationDate or FieldSecurityCode
	Code    string // one of the Code constants
	Message string // human-readable, no input data
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

var (
	errNumberRequired   = FieldError{FieldNumber, CodeRequired, "card number is required"}
	errNumberCharacters = FieldError{FieldNumber, CodeInvalidCharacters, "card number may contain only digits, spaces and dashes"}
	errNumberFormat     = FieldError{FieldNumber, CodeInvalidFormat, "card number may separate digit groups only with a single space or dash"}
	errNumberLength     = FieldError{FieldNumber, CodeInvalidLength, "card number must have 12 to 19 digits"}
	errNumberLuhn       = FieldError{FieldNumber, CodeLuhnCheckFailed, "card number is not valid (check digit mismatch)"}

	errExpiryRequired = FieldError{FieldExpirationDate, CodeRequired, "expiration date is required"}
	errExpiryFormat   = FieldError{FieldExpirationDate, CodeInvalidFormat, "expiration date must be in MM/YY format"}
	errExpiryMonth    = FieldError{FieldExpirationDate, CodeInvalidMonth, "expiration month must be between 01 and 12"}
	errExpired        = FieldError{FieldExpirationDate, CodeExpired, "card has expired"}

	errSecurityCodeRequired = FieldError{FieldSecurityCode, CodeRequired, "security code is required"}
	errSecurityCode3        = FieldError{FieldSecurityCode, CodeInvalidSecurityCode, "security code must be 3 digits"}
	errSecurityCode4        = FieldError{FieldSecurityCode, CodeInvalidSecurityCode, "security code must be 4 digits"}
	errSecurityCode34       = FieldError{FieldSecurityCode, CodeInvalidSecurityCode, "security code must be 3 or 4 digits"}
)
