package bank

// Request field names used in FieldError.Field.
const (
	FieldScheme            = "scheme"
	FieldAccountNumber     = "account_number"
	FieldRoutingNumber     = "routing_number"
	FieldAccountType       = "account_type"
	FieldIBAN              = "iban"
	FieldBIC               = "bic"
	FieldSortCode          = "sort_code"
	FieldCountry           = "country"
	FieldCurrency          = "currency"
	FieldAccountHolderName = "account_holder_name"
)

// Fields lists every field in the order Validate reports errors.
var Fields = []string{
	FieldScheme, FieldAccountHolderName, FieldAccountType, FieldRoutingNumber, FieldSortCode,
	FieldAccountNumber, FieldIBAN, FieldBIC, FieldCountry, FieldCurrency,
}

// Codes in FieldError.Code: stable snake_case words; add, never rename.
const (
	CodeRequired           = "required"            // the field is empty
	CodeInvalidCharacters  = "invalid_characters"  // something other than the allowed characters
	CodeInvalidFormat      = "invalid_format"      // characters fine, shape wrong (BIC, separators)
	CodeInvalidLength      = "invalid_length"      // wrong number of digits / characters
	CodeChecksumFailed     = "checksum_failed"     // ABA or IBAN check digits wrong
	CodeUnsupportedScheme  = "unsupported_scheme"  // scheme is not ach, sepa or bacs
	CodeUnsupportedCountry = "unsupported_country" // unknown country code, or not one the scheme serves
	CodeCurrencyMismatch   = "currency_mismatch"   // not a currency the scheme settles in
	CodeInvalidValue       = "invalid_value"       // not one of the allowed values (account_type)
	CodeNotAllowed         = "not_allowed"         // the field does not belong to this scheme
)

// FieldError is a validation failure of one field. Message is safe to
// return to a client and to log: it never quotes the input.
type FieldError struct {
	Field   string
	Code    string
	Message string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }
