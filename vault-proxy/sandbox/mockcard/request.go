package mockcard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging/panscan"
)

// authorizeRequest is the body of POST /v1/authorizations. The card
// number and security code are Go strings, which cannot be cleared: they
// live until the collector takes them. The simulator keeps neither beyond
// the request (a record holds the scheme and the results only).
type authorizeRequest struct {
	Amount                      int64           `json:"amount"`
	Currency                    string          `json:"currency"`
	Capture                     bool            `json:"capture"`
	Card                        cardData        `json:"card"`
	Billing                     *billing        `json:"billing"`
	MerchantInitiated           bool            `json:"merchant_initiated"`
	PaymentSource               string          `json:"payment_source"`
	PreviousSchemeTransactionID string          `json:"previous_scheme_transaction_id"`
	Options                     json.RawMessage `json:"options"`
	MerchantDescriptor          string          `json:"merchant_descriptor"`
	SoftDescriptor              string          `json:"soft_descriptor"`
	ThreeDSecure                *ThreeDSecure   `json:"three_d_secure"`
	// NotificationURL is where a result that comes later is sent
	// (notify.go); "" sends none.
	NotificationURL string `json:"notification_url"`
	// CartItems are what the payment buys, recorded and answered as sent.
	CartItems []CartItem `json:"cart_items"`
}

// CartItem is one line of an authorization's cart, in core-api's shape
// (its docs/transactions.md). The simulator checks only what a processor
// needs to read one; it decides nothing by them.
type CartItem struct {
	Name              string   `json:"name"`
	Quantity          int64    `json:"quantity"`
	UnitAmount        int64    `json:"unit_amount"`
	DiscountAmount    *int64   `json:"discount_amount,omitempty"`
	TaxAmount         *int64   `json:"tax_amount,omitempty"`
	ExternalProductID *string  `json:"external_product_id,omitempty"`
	SKU               *string  `json:"sku,omitempty"`
	ProductURL        *string  `json:"product_url,omitempty"`
	ImageURL          *string  `json:"image_url,omitempty"`
	Categories        []string `json:"categories,omitempty"`
	ProductType       *string  `json:"product_type,omitempty"`
	SellerCountry     *string  `json:"seller_country,omitempty"`
}

// ThreeDSecure is the buyer's 3-D Secure authentication an authorization
// carries, recorded as sent.
type ThreeDSecure struct {
	Version string `json:"version"`
	Status  string `json:"status"`
	CAVV    string `json:"cavv"`
	ECI     string `json:"eci"`
}

type cardData struct {
	Number       string `json:"number"`
	ExpiryMonth  string `json:"expiry_month"`
	ExpiryYear   string `json:"expiry_year"`
	SecurityCode string `json:"security_code"`
}

type billing struct {
	PostalCode string `json:"postal_code"`
}

// amountRequest is the body of a capture or a refund: no amount is all
// that is left.
type amountRequest struct {
	Amount *int64 `json:"amount"`
}

// voidRequest is the body of a void: nothing, or an empty object.
type voidRequest struct{}

const (
	maxBodyBytes   = 64 << 10
	maxKeyLength   = 255
	maxPostalCode  = 16
	maxPreviousSTI = 64
)

// Payment sources, and those a merchant-initiated payment may have.
var (
	paymentSources = []string{"ecommerce", "moto", "recurring", "installment", "card_on_file"}
	mitSources     = []string{"recurring", "installment", "card_on_file"}
)

// idempotencyKey reads the required Idempotency-Key header.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	return k, checkKey(k, apierror.LocationHeader, "Idempotency-Key")
}

// keyParam reads the idempotency_key query parameter.
func keyParam(r *http.Request) (string, error) {
	k := r.URL.Query().Get("idempotency_key")
	return k, checkKey(k, apierror.LocationQuery, "idempotency_key")
}

// checkKey holds an idempotency key to 1 to 255 visible ASCII characters
// without a card number (keys are echoed in answers, which leave the PCI
// zone). location and name say where it was read.
func checkKey(k, location, name string) error {
	msg := ""
	switch {
	case k == "":
		msg = name + " is required"
	case len(k) > maxKeyLength || strings.IndexFunc(k, func(c rune) bool { return c <= ' ' || c > '~' }) >= 0:
		msg = name + " must be 1 to 255 visible ASCII characters"
	case panscan.InIdentifier(k):
		msg = name + " must not hold a card number"
	default:
		return nil
	}
	return apierror.BadRequest(msg, apierror.Detail{Location: location, Pointer: name, Message: msg, Type: "value_error." + location})
}

var errEmptyBody = apierror.BadRequest("a JSON object is required",
	apierror.Detail{Location: apierror.LocationBody, Pointer: "", Message: "a JSON object is required", Type: "value_error.missing"})

// decodeBody reads r's JSON body into dst strictly: a JSON content type,
// at most 64 KiB, one object, no unknown field, each field of its type.
// An empty body leaves dst as it is when emptyOK. Error messages name
// fields and types, never a value.
func decodeBody(r *http.Request, dst any, emptyOK bool) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	defer clear(body) // it may hold a card number
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return apierror.TooLarge("the request body is over 64 KiB")
	}
	if err != nil {
		return apierror.BadRequest("the request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return errEmptyBody
	}
	if err := apierror.CheckJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if dec.Decode(&struct{}{}) != io.EOF {
		return apierror.BadRequest("the request body must be one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		ptr := "/" + strings.ReplaceAll(te.Field, ".", "/")
		msg := "must be " + kindName(te.Type)
		return apierror.BadRequest("invalid request body",
			apierror.Detail{Location: apierror.LocationBody, Pointer: ptr, Message: msg, Type: "type_error"})
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// The name is the client's; the envelope masks a card number in it.
		msg := "unknown field " + name
		return apierror.BadRequest("invalid request body",
			apierror.Detail{Location: apierror.LocationBody, Pointer: "", Message: msg, Type: "value_error.extra"})
	}
	return apierror.BadRequest("the request body is not a valid JSON object")
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int64, reflect.Pointer:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	}
	return "an object"
}

// problems collects the details of a 400.
type problems []apierror.Detail

func (p *problems) add(ptr, msg, typ string) {
	*p = append(*p, apierror.Detail{Location: apierror.LocationBody, Pointer: ptr, Message: msg, Type: typ})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return apierror.BadRequest("invalid request body", p...)
}

// validate checks the values decodeBody cannot, in the order of the
// fields, and fills the defaults in: what it leaves is what the answer
// and the idempotency check compare.
func (r *authorizeRequest) validate() error {
	var p problems
	checkAmount(&p, r.Amount)
	if !allIn(r.Currency, 'A', 'Z') || len(r.Currency) != 3 {
		p.add("/currency", "must be an ISO 4217 code of three capital letters", "value_error.currency")
	}
	c := &r.Card
	switch {
	case c.Number == "":
		p.add("/card/number", "is required", "value_error.missing")
	case len(c.Number) < 12 || len(c.Number) > 19 || !allIn(c.Number, '0', '9'):
		p.add("/card/number", "must be 12 to 19 digits", "value_error.card_number")
	}
	if len(c.ExpiryMonth) == 0 || len(c.ExpiryMonth) > 2 || !allIn(c.ExpiryMonth, '0', '9') || atoi(c.ExpiryMonth) < 1 || atoi(c.ExpiryMonth) > 12 {
		p.add("/card/expiry_month", "must be a month from 1 to 12 (\"01\" to \"12\")", "value_error.expiry_month")
	}
	if len(c.ExpiryYear) != 4 || !allIn(c.ExpiryYear, '0', '9') {
		p.add("/card/expiry_year", "must be a year of four digits", "value_error.expiry_year")
	}
	if c.SecurityCode != "" && (len(c.SecurityCode) < 3 || len(c.SecurityCode) > 4 || !allIn(c.SecurityCode, '0', '9')) {
		p.add("/card/security_code", "must be 3 or 4 digits", "value_error.security_code")
	}
	if r.Billing != nil {
		if r.Billing.PostalCode = strings.TrimSpace(r.Billing.PostalCode); r.Billing.PostalCode == "" {
			r.Billing = nil
		} else if len(r.Billing.PostalCode) > maxPostalCode {
			p.add("/billing/postal_code", "must be at most 16 characters", "value_error.postal_code")
		}
	}
	if r.PaymentSource == "" {
		r.PaymentSource = "ecommerce"
	}
	switch {
	case !slices.Contains(paymentSources, r.PaymentSource):
		p.add("/payment_source", "must be one of "+strings.Join(paymentSources, ", "), "value_error.enum")
	case r.MerchantInitiated && !slices.Contains(mitSources, r.PaymentSource):
		p.add("/payment_source", "a merchant-initiated payment must be one of "+strings.Join(mitSources, ", "), "value_error.enum")
	}
	// A merchant-initiated payment without one is no malformed request:
	// the issuer declines it (decide).
	if id := r.PreviousSchemeTransactionID; len(id) > maxPreviousSTI || !alnum(id) {
		p.add("/previous_scheme_transaction_id", "must be 1 to 64 letters and digits", "value_error.scheme_transaction_id")
	}
	if o := bytes.TrimSpace(r.Options); len(o) > 0 && o[0] != '{' && string(o) != "null" {
		p.add("/options", "must be an object", "type_error")
	}
	checkDescriptor(&p, "/merchant_descriptor", r.MerchantDescriptor)
	checkDescriptor(&p, "/soft_descriptor", r.SoftDescriptor)
	checkNotificationURL(&p, r.NotificationURL)
	checkCartItems(&p, r.CartItems)
	return p.err()
}

// maxCartItems is core-api's bound on a transaction's cart.
const maxCartItems = 100

func checkCartItems(p *problems, items []CartItem) {
	if len(items) > maxCartItems {
		p.add("/cart_items", "must have at most 100 items", "value_error.list.max_items")
		return
	}
	for i, it := range items {
		ptr := "/cart_items/" + strconv.Itoa(i)
		if it.Name == "" {
			p.add(ptr+"/name", "is required", "value_error.missing")
		}
		if it.Quantity < 1 {
			p.add(ptr+"/quantity", "must be at least 1", "value_error.number.not_ge")
		}
		if it.UnitAmount < 0 {
			p.add(ptr+"/unit_amount", "must be at least 0", "value_error.number.not_ge")
		}
	}
}

// maxDescriptor is the most a card statement shows of a descriptor.
const maxDescriptor = 22

// checkDescriptor holds a descriptor ("" is none) to what a statement can
// show: letters, digits, spaces and . , * & ' - (so never a card number's
// run of digits long enough to pass for one, nor a placeholder).
func checkDescriptor(p *problems, ptr, d string) {
	if d == "" {
		return
	}
	ok := len(d) <= maxDescriptor
	for i := 0; ok && i < len(d); i++ {
		c := d[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" .,*&'-", c) >= 0
	}
	if !ok {
		p.add(ptr, "must be at most 22 letters, digits, spaces and . , * & ' -", "value_error.descriptor")
	}
}

// validate checks a capture's or refund's amount, when there is one.
func (r *amountRequest) validate() error {
	if r.Amount == nil {
		return nil
	}
	var p problems
	checkAmount(&p, *r.Amount)
	return p.err()
}

func checkAmount(p *problems, n int64) {
	if n < 1 || n > maxAmount {
		p.add("/amount", "must be an integer from 1 to 99999999999 (minor units)", "value_error.amount")
	}
}

// allIn reports whether every byte of s is in [lo, hi].
func allIn(s string, lo, hi byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < lo || s[i] > hi {
			return false
		}
	}
	return true
}

func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// atoi reads a month or a year whose digits allIn has checked.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
