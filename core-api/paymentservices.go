package coreapi

import (
	"encoding/json"
	"regexp"
	"time"
)

// PaymentService is a merchant account's configuration of one connector
// (docs/payment-services.md): which processor handles a payment method,
// with the merchant's own settings and credentials there. The
// credentials are never part of it: CredentialsSet names the fields that
// are stored (encrypted), and only a connector's call receives their
// values.
type PaymentService struct {
	ID                string // UUID
	MerchantAccountID string
	Connector         string // a registered connector's name
	Method            string // the payment method it processes (card)
	DisplayName       *string
	Active            bool
	// Default: the merchant account's payment service for Method when a
	// transaction names none. At most one per account and method.
	Default bool
	// Settings are the connector's non-secret settings, as validated
	// against its schema: a JSON object.
	Settings       json.RawMessage
	CredentialsSet []string // sorted
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// PaymentServiceFields is the body of a create or a partial update. On
// create, Connector is required and Method defaults to the connector's
// first; on update both are fixed (a change of processor is a new payment
// service) and absent fields keep their value. Settings are replaced as a
// whole when given; Credentials, when given, name the credentials to
// replace (null drops an optional one) and keep the others.
type PaymentServiceFields struct {
	Connector   string
	Method      string
	DisplayName Optional[string]
	Active      Optional[bool]
	Default     Optional[bool]
	Settings    json.RawMessage // nil: absent
	Credentials json.RawMessage // nil: absent
}

// PaymentServiceSummary is the payment service a transaction shows
// (nil when the sandbox's built-in configuration processed it).
type PaymentServiceSummary struct {
	ID          string
	Connector   string
	DisplayName *string
}

var connectorNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Validate checks the values that need no connector: the connector's
// schemas are the service's to apply.
func (f PaymentServiceFields) Validate(create bool) error {
	var v Problems
	if create {
		if f.Connector == "" {
			v.Add("/connector", "is required", "value_error.missing")
		} else if !connectorNameRE.MatchString(f.Connector) {
			v.Add("/connector", "must be a connector name such as mock-card (lower case)", "value_error.str.regex")
		}
		if f.Method != "" && !methodPattern.MatchString(f.Method) {
			v.Add("/method", "must be a method name such as card (lower case)", "value_error.str.regex")
		}
		if f.Credentials == nil {
			v.Add("/credentials", "is required (an object; {} for a connector that takes none)", "value_error.missing")
		}
	}
	v.text("/display_name", f.DisplayName.Ptr())
	for _, o := range []struct {
		p   string
		set bool
		nul bool
	}{{"/active", f.Active.Set, f.Active.Null}, {"/default", f.Default.Set, f.Default.Null}} {
		if o.set && o.nul {
			v.Add(o.p, "must be true or false", "type_error.bool")
		}
	}
	if f.Credentials != nil && isNull(f.Credentials) {
		v.Add("/credentials", "must be an object naming the credentials to replace; those not named are kept", "type_error.dict")
	}
	if f.Settings != nil && isNull(f.Settings) {
		v.Add("/settings", "must be an object ({} for none)", "type_error.dict")
	}
	return v.Err()
}

func isNull(raw json.RawMessage) bool {
	var x any
	return json.Unmarshal(raw, &x) == nil && x == nil
}

// A payment service that cannot be used for a transaction (422, pointing
// at /payment_service_id); its Code is the error's code.
var (
	ErrPaymentServiceNotFound = &PaymentServiceError{Code: "payment_service_not_found",
		Message: "no payment service with this id in this merchant account"}
	ErrPaymentServiceInactive = &PaymentServiceError{Code: "payment_service_inactive",
		Message: "the payment service is not active"}
	ErrPaymentServiceMethod = &PaymentServiceError{Code: "payment_service_method_mismatch",
		Message: "the payment service does not process this payment method"}
	// ErrPaymentServiceUnavailable: no payment service was named, the
	// merchant account has no active default for the method, and the
	// environment has no built-in one (production).
	ErrPaymentServiceUnavailable = &PaymentServiceError{Code: "payment_service_unavailable",
		Message: "no payment service is named and the merchant account has no default one for this payment method"}
	// ErrPaymentServiceConnector: the payment service's connector is not
	// registered in this environment (a sandbox connector in production).
	ErrPaymentServiceConnector = &PaymentServiceError{Code: "payment_service_connector_unavailable",
		Message: "the payment service's connector is not available in this environment"}
)

// PaymentServiceError is a payment service a transaction cannot use.
type PaymentServiceError struct {
	Code    string
	Message string
}

func (e *PaymentServiceError) Error() string { return e.Message }
