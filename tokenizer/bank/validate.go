package bank

import (
	"regexp"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Schemes.
const (
	SchemeACH  = "ach"
	SchemeSEPA = "sepa"
	SchemeBACS = "bacs"
)

// Account types (ach).
const (
	AccountTypeChecking = "checking"
	AccountTypeSavings  = "savings"
)

// MaxHolderNameLen is the longest account_holder_name, in characters.
const MaxHolderNameLen = 200

// Input is the bank part of a create-payment-method request as the HTTP
// layer decoded it. AccountNumber and IBAN are byte slices so the caller can
// clear them after Validate, which neither modifies nor retains them.
type Input struct {
	Scheme            string
	AccountNumber     []byte // ach, bacs
	RoutingNumber     string // ach
	AccountType       string // ach, optional
	IBAN              []byte // sepa
	BIC               string // sepa, optional
	SortCode          string // bacs
	AccountHolderName string
	Country           string // optional: derived when empty
	Currency          string // optional: derived when empty
}

// Account is validated bank account data. Number is the only sensitive
// field (and redacts itself); everything else may cross to core-api.
type Account struct {
	Scheme            string
	Number            Number // account number (ach, bacs) or IBAN (sepa), normalized
	RoutingNumber     string // ach
	AccountType       string // ach, "" when not given
	BIC               string // sepa, "" when not given
	SortCode          string // bacs, 6 digits without separators
	AccountHolderName string
	Country           string // ISO 3166-1 alpha-2
	Currency          string // ISO 4217
}

// Last4 is the label of the payment method: the last 4 of the number.
func (a Account) Last4() string { return a.Number.Last4() }

// Zero clears the sensitive number.
func (a Account) Zero() { a.Number.Zero() }

type schemeRule struct {
	country, currency string // fixed for ach/bacs; currency only for sepa
	allowed           map[string]bool
}

var rules = map[string]schemeRule{
	SchemeACH:  {"US", "USD", set(FieldAccountNumber + " " + FieldRoutingNumber + " " + FieldAccountType)},
	SchemeSEPA: {"", "EUR", set(FieldIBAN + " " + FieldBIC)},
	SchemeBACS: {"GB", "GBP", set(FieldAccountNumber + " " + FieldSortCode)},
}

// Validate checks every field of in and returns either the Account and no
// errors, or the zero Account and one FieldError per bad field in the order
// of Fields. See the package documentation for the rules.
func Validate(in Input) (Account, []FieldError) {
	var errs []FieldError
	add := func(f, code, msg string) { errs = append(errs, FieldError{f, code, msg}) }

	rule, ok := rules[in.Scheme]
	if !ok {
		if in.Scheme == "" {
			add(FieldScheme, CodeRequired, "scheme is required")
		} else {
			add(FieldScheme, CodeUnsupportedScheme, "scheme must be one of ach, sepa, bacs")
		}
		return Account{}, errs
	}
	a := Account{Scheme: in.Scheme}

	switch n := utf8.RuneCountInString(in.AccountHolderName); {
	case n == 0:
		add(FieldAccountHolderName, CodeRequired, "account holder name is required")
	case n > MaxHolderNameLen:
		add(FieldAccountHolderName, CodeInvalidLength, "account holder name must be at most 200 characters")
	case !utf8.ValidString(in.AccountHolderName) || hasControl(in.AccountHolderName):
		add(FieldAccountHolderName, CodeInvalidCharacters, "account holder name must be valid text without control characters")
	default:
		a.AccountHolderName = in.AccountHolderName
	}

	given := map[string]bool{
		FieldAccountType: in.AccountType != "", FieldRoutingNumber: in.RoutingNumber != "",
		FieldSortCode: in.SortCode != "", FieldAccountNumber: len(in.AccountNumber) > 0,
		FieldIBAN: len(in.IBAN) > 0, FieldBIC: in.BIC != "",
	}
	// Fields in Fields order; each either belongs to the scheme or must be absent.
	for _, f := range Fields[2:8] {
		if !rule.allowed[f] {
			if given[f] {
				add(f, CodeNotAllowed, f+" is not used by the "+in.Scheme+" scheme")
			}
			continue
		}
		switch f {
		case FieldAccountType:
			switch in.AccountType {
			case "", AccountTypeChecking, AccountTypeSavings:
				a.AccountType = in.AccountType
			default:
				add(f, CodeInvalidValue, "account type must be checking or savings")
			}
		case FieldRoutingNumber:
			if fe := checkRouting(in.RoutingNumber); fe != nil {
				errs = append(errs, *fe)
			} else {
				a.RoutingNumber = in.RoutingNumber
			}
		case FieldSortCode:
			if sc, fe := checkSortCode(in.SortCode); fe != nil {
				errs = append(errs, *fe)
			} else {
				a.SortCode = sc
			}
		case FieldAccountNumber:
			lo, hi, msg := 4, 17, "account number must have 4 to 17 digits"
			if in.Scheme == SchemeBACS {
				lo, hi, msg = 8, 8, "account number must have 8 digits"
			}
			if fe := checkDigits(FieldAccountNumber, in.AccountNumber, lo, hi, msg); fe != nil {
				errs = append(errs, *fe)
			} else {
				a.Number = newNumber(in.AccountNumber)
			}
		case FieldIBAN:
			if iban, fe := checkIBAN(in.IBAN); fe != nil {
				errs = append(errs, *fe)
			} else {
				a.Number = iban
			}
		case FieldBIC:
			if in.BIC == "" {
				continue
			}
			if fe := checkBIC(in.BIC); fe != nil {
				errs = append(errs, *fe)
			} else {
				a.BIC = in.BIC
			}
		}
	}

	// Country: fixed for ach/bacs, the IBAN's for sepa.
	want := rule.country
	if in.Scheme == SchemeSEPA && !a.Number.IsZero() {
		want = string(a.Number.Reveal()[:2])
	}
	switch {
	case in.Country == "":
		a.Country = want
	case !IsCountry(in.Country):
		add(FieldCountry, CodeUnsupportedCountry, "country must be an ISO 3166-1 alpha-2 code")
	case want != "" && in.Country != want:
		add(FieldCountry, CodeUnsupportedCountry, "country must be the account's country ("+want+") for the "+in.Scheme+" scheme")
	default:
		a.Country = in.Country
	}
	switch in.Currency {
	case "", rule.currency:
		a.Currency = rule.currency
	default:
		add(FieldCurrency, CodeCurrencyMismatch, "currency must be "+rule.currency+" for the "+in.Scheme+" scheme")
	}

	if len(errs) > 0 {
		a.Zero()
		return Account{}, errs
	}
	return a, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

func checkDigits(field string, b []byte, lo, hi int, lengthMsg string) *FieldError {
	if len(b) == 0 {
		return &FieldError{field, CodeRequired, field + " is required"}
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return &FieldError{field, CodeInvalidCharacters, field + " may contain only digits"}
		}
	}
	if len(b) < lo || len(b) > hi {
		return &FieldError{field, CodeInvalidLength, lengthMsg}
	}
	return nil
}

// ABARoutingValid reports whether s is 9 digits with a valid ABA checksum
// (weights 3, 7, 1).
func ABARoutingValid(s string) bool { return len(s) == 9 && onlyDigits(s) && abaSum(s)%10 == 0 }

func abaSum(s string) int {
	w := [3]int{3, 7, 1}
	sum := 0
	for i := 0; i < 9; i++ {
		sum += w[i%3] * int(s[i]-'0')
	}
	return sum
}

func onlyDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func checkRouting(s string) *FieldError {
	if fe := checkDigits(FieldRoutingNumber, []byte(s), 9, 9, "routing number must have 9 digits"); fe != nil {
		return fe
	}
	if abaSum(s)%10 != 0 {
		return &FieldError{FieldRoutingNumber, CodeChecksumFailed, "routing number is not valid (check digit mismatch)"}
	}
	return nil
}

var sortCodeShape = regexp.MustCompile(`^[0-9]{2}([- ]?)[0-9]{2}([- ]?)[0-9]{2}$`)

func checkSortCode(s string) (string, *FieldError) {
	if s == "" {
		return "", &FieldError{FieldSortCode, CodeRequired, "sort code is required"}
	}
	digits := make([]byte, 0, 6)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c != '-' && c != ' ':
			return "", &FieldError{FieldSortCode, CodeInvalidCharacters, "sort code may contain only digits, dashes and spaces"}
		}
	}
	if len(digits) != 6 {
		return "", &FieldError{FieldSortCode, CodeInvalidLength, "sort code must have 6 digits"}
	}
	m := sortCodeShape.FindStringSubmatch(s)
	if m == nil || m[1] != m[2] {
		return "", &FieldError{FieldSortCode, CodeInvalidFormat, "sort code must be 6 digits, optionally in pairs separated by single dashes or spaces"}
	}
	return string(digits), nil
}

var bicShape = regexp.MustCompile(`^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$`)

func checkBIC(s string) *FieldError {
	if len(s) != 8 && len(s) != 11 {
		return &FieldError{FieldBIC, CodeInvalidLength, "bic must have 8 or 11 characters"}
	}
	if !bicShape.MatchString(s) {
		return &FieldError{FieldBIC, CodeInvalidFormat, "bic must be 4 letters (bank), 2 letters (country), 2 letters or digits (location) and optionally 3 letters or digits (branch), in upper case"}
	}
	if !IsCountry(s[4:6]) {
		return &FieldError{FieldBIC, CodeUnsupportedCountry, "bic does not name a country in positions 5-6"}
	}
	return nil
}

// checkIBAN normalizes (drops spaces, upper-cases) and validates an IBAN.
// The normalized copy is the returned Number; scratch space is cleared.
func checkIBAN(b []byte) (Number, *FieldError) {
	buf := make([]byte, 0, 34)
	defer clear(buf[:cap(buf)])
	for _, c := range b {
		switch {
		case c == ' ':
		case c >= 'a' && c <= 'z':
			buf = append(buf, c-'a'+'A')
		case (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
			buf = append(buf, c)
		default:
			return Number{}, &FieldError{FieldIBAN, CodeInvalidCharacters, "iban may contain only letters, digits and spaces"}
		}
		if len(buf) > 34 {
			return Number{}, &FieldError{FieldIBAN, CodeInvalidLength, "iban must have at most 34 characters"}
		}
	}
	if len(buf) == 0 {
		return Number{}, &FieldError{FieldIBAN, CodeRequired, "iban is required"}
	}
	if len(buf) < 4 || !isUpper(buf[0]) || !isUpper(buf[1]) || !isDigit(buf[2]) || !isDigit(buf[3]) {
		return Number{}, &FieldError{FieldIBAN, CodeInvalidFormat, "iban must start with a country code and two check digits"}
	}
	cc := string(buf[:2])
	want := ibanLengths[cc]
	if want == 0 {
		return Number{}, &FieldError{FieldIBAN, CodeUnsupportedCountry, "iban country code does not issue IBANs"}
	}
	if len(buf) != want {
		return Number{}, &FieldError{FieldIBAN, CodeInvalidLength, "iban must have " + strconv.Itoa(want) + " characters for country " + cc}
	}
	if !ibanMod97(buf) {
		return Number{}, &FieldError{FieldIBAN, CodeChecksumFailed, "iban is not valid (check digit mismatch)"}
	}
	if !IsSEPACountry(cc) {
		return Number{}, &FieldError{FieldIBAN, CodeUnsupportedCountry, "iban country " + cc + " is not in the SEPA area"}
	}
	return newNumber(buf), nil
}

// IBANValid reports whether s (normalized: upper case, no spaces) has a
// known country, its length and valid check digits (ISO 7064 mod 97-10).
func IBANValid(s string) bool {
	return len(s) > 4 && ibanLengths[s[:2]] == len(s) && ibanMod97([]byte(s))
}

// ibanMod97: move the first four characters to the end, letters become
// 10..35, the number mod 97 must be 1. Computed digit by digit.
func ibanMod97(b []byte) bool {
	r := 0
	for i := range b {
		c := b[(i+4)%len(b)]
		switch {
		case isDigit(c):
			r = (r*10 + int(c-'0')) % 97
		case isUpper(c):
			r = (r*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return r == 1
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
