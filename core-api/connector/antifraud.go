package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
)

// MethodAntiFraud is the "payment method" of anti-fraud payment services:
// the account's default for it screens its card payments.
const MethodAntiFraud = "anti-fraud"

// Anti-fraud API versions of mock-antifraud's connector: v2.1 unless a
// payment service's api_version setting says v10.2.
const (
	AntiFraudV21  = "v2.1"
	AntiFraudV102 = "v10.2"
)

// AntiFraudRequest asks an anti-fraud provider about a card payment:
// what the buyer, the cart and the card look like (the card's BIN and
// scheme, never its number).
type AntiFraudRequest struct {
	MerchantAccountID string
	Reference         string // the transaction's id
	Amount            int64
	Currency          string
	Fingerprint       string // anti_fraud_fingerprint: the device session
	CartItems         []coreapi.CartItem
	FirstName         string
	LastName          string
	EmailAddress      string
	Country           string
	PostalCode        string
	CardBIN           string
	CardScheme        string
	Config            Config
}

// AntiFraudConnector screens card payments before their authorization.
type AntiFraudConnector interface {
	Connector
	// Assess answers accept, reject or review
	// (coreapi.AntiFraudAccept, ...); an error is the provider's failure,
	// which the payment service's fail_open setting decides about.
	Assess(ctx context.Context, r AntiFraudRequest) (string, error)
}

// AntiFraud returns the named connector if it screens payments.
func (r *Registry) AntiFraud(name string) (AntiFraudConnector, error) {
	c, ok := r.byName[name].(AntiFraudConnector)
	if !ok {
		return nil, ErrUnknown
	}
	return c, nil
}

// MockAntiFraudName is the sandbox anti-fraud provider's connector.
const MockAntiFraudName = "mock-antifraud"

// MockAntiFraud is the connector of mock-antifraud, the sandbox
// anti-fraud provider (docs/sandbox/mock-antifraud.md), reached over
// HTTP. Its payment services choose the provider's API version with the
// api_version setting: v2.1, the default (a payment service that never
// set it stays on it), or v10.2; the two send differently shaped
// requests and read differently shaped answers. fail_open says what a
// provider's failure means: let the payment through (true) or fail it
// (false, the default).
type MockAntiFraud struct {
	BaseURL string
	HTTP    *http.Client // nil: a client with a 10 s timeout
}

// Name is "mock-antifraud".
func (MockAntiFraud) Name() string { return MockAntiFraudName }

var antiFraudVersionRE = regexp.MustCompile(`^v(2\.1|10\.2)$`)

// Schemas declares the API version toggle, fail_open and the API key.
func (MockAntiFraud) Schemas() Schemas {
	return Schemas{
		Methods: []string{MethodAntiFraud},
		Settings: Schema{
			{Name: "api_version", Kind: KindString, MaxLength: 8, Pattern: antiFraudVersionRE, PatternText: "v2.1 or v10.2"},
			{Name: "fail_open", Kind: KindBoolean},
		},
		Credentials: Schema{{Name: "api_key", Kind: KindString, Required: true, MinLength: 1, MaxLength: 256}},
	}
}

// AntiFraudVersion is the API version a payment service's settings
// choose: v2.1 unless api_version says otherwise.
func AntiFraudVersion(settings Values) string {
	if v := settings.String("api_version"); v != "" {
		return v
	}
	return AntiFraudV21
}

// FailOpen is a payment service's fail_open setting (false when unset).
func FailOpen(settings Values) bool {
	b, _ := settings["fail_open"].(bool)
	return b
}

// mockAntiFraudSandboxKey is the key of the built-in configuration (no
// payment service): the sandbox takes any.
const mockAntiFraudSandboxKey = "af_test_sandbox"

// Assess sends the request in the payment service's API version.
func (m MockAntiFraud) Assess(ctx context.Context, r AntiFraudRequest) (string, error) {
	if AntiFraudVersion(r.Config.Settings) == AntiFraudV102 {
		var out struct {
			Assessment struct {
				Recommendation string `json:"recommendation"`
			} `json:"assessment"`
		}
		if err := m.post(ctx, r.Config, "/v10.2/assessments", v102Body(r), &out); err != nil {
			return "", err
		}
		d, ok := map[string]string{"APPROVE": coreapi.AntiFraudAccept, "DECLINE": coreapi.AntiFraudReject, "REVIEW": coreapi.AntiFraudReview}[out.Assessment.Recommendation]
		if !ok {
			return "", fmt.Errorf("%s v10.2: unknown recommendation %q", MockAntiFraudName, out.Assessment.Recommendation)
		}
		return d, nil
	}
	var out struct {
		Decision string `json:"decision"`
	}
	if err := m.post(ctx, r.Config, "/v2.1/decisions", v21Body(r), &out); err != nil {
		return "", err
	}
	switch out.Decision {
	case coreapi.AntiFraudAccept, coreapi.AntiFraudReject, coreapi.AntiFraudReview:
		return out.Decision, nil
	}
	return "", fmt.Errorf("%s v2.1: unknown decision %q", MockAntiFraudName, out.Decision)
}

// v21Body is v2.1's flat request.
func v21Body(r AntiFraudRequest) any {
	type item struct {
		Name      string `json:"name"`
		Quantity  int64  `json:"quantity"`
		UnitPrice int64  `json:"unit_price"`
		SKU       string `json:"sku,omitempty"`
	}
	items := make([]item, len(r.CartItems))
	for i, c := range r.CartItems {
		items[i] = item{c.Name, c.Quantity, c.UnitAmount, deref(c.SKU)}
	}
	return struct {
		OrderID   string `json:"order_id"`
		Amount    int64  `json:"amount"`
		Currency  string `json:"currency"`
		SessionID string `json:"session_id"`
		CardBIN   string `json:"card_bin"`
		CardBrand string `json:"card_brand"`
		Email     string `json:"email"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Country   string `json:"billing_country"`
		Postcode  string `json:"billing_postal_code"`
		Items     []item `json:"items"`
	}{r.Reference, r.Amount, r.Currency, r.Fingerprint, r.CardBIN, r.CardScheme, r.EmailAddress, r.FirstName, r.LastName,
		r.Country, r.PostalCode, items}
}

// v102Body is v10.2's nested request.
func v102Body(r AntiFraudRequest) any {
	type line struct {
		Description     string `json:"description"`
		Qty             int64  `json:"qty"`
		UnitAmountMinor int64  `json:"unit_amount_minor"`
		ProductID       string `json:"product_id,omitempty"`
	}
	lines := make([]line, len(r.CartItems))
	for i, c := range r.CartItems {
		lines[i] = line{c.Name, c.Quantity, c.UnitAmount, deref(c.ExternalProductID)}
	}
	type amount struct {
		MinorUnits int64  `json:"minor_units"`
		Currency   string `json:"currency"`
	}
	type name struct {
		Given  string `json:"given"`
		Family string `json:"family"`
	}
	type address struct {
		Country    string `json:"country"`
		PostalCode string `json:"postal_code"`
	}
	return struct {
		Transaction struct {
			Reference string `json:"reference"`
			Amount    amount `json:"amount"`
		} `json:"transaction"`
		Device struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"device"`
		PaymentMethod struct {
			Type    string `json:"type"`
			BIN     string `json:"bin"`
			Network string `json:"network"`
		} `json:"payment_method"`
		Purchaser struct {
			Name    name    `json:"name"`
			Email   string  `json:"email"`
			Address address `json:"address"`
		} `json:"purchaser"`
		Cart struct {
			Lines []line `json:"lines"`
		} `json:"cart"`
	}{
		Transaction: struct {
			Reference string `json:"reference"`
			Amount    amount `json:"amount"`
		}{r.Reference, amount{r.Amount, r.Currency}},
		Device: struct {
			Fingerprint string `json:"fingerprint"`
		}{r.Fingerprint},
		PaymentMethod: struct {
			Type    string `json:"type"`
			BIN     string `json:"bin"`
			Network string `json:"network"`
		}{"card", r.CardBIN, strings.ToUpper(r.CardScheme)},
		Purchaser: struct {
			Name    name    `json:"name"`
			Email   string  `json:"email"`
			Address address `json:"address"`
		}{name{r.FirstName, r.LastName}, r.EmailAddress, address{r.Country, r.PostalCode}},
		Cart: struct {
			Lines []line `json:"lines"`
		}{lines},
	}
}

// errAntiFraudStatus is an answer that is not a decision.
var errAntiFraudStatus = errors.New("unexpected status")

func (m MockAntiFraud) post(ctx context.Context, cfg Config, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	key := mockAntiFraudSandboxKey
	if k, ok := cfg.Credentials["api_key"]; ok {
		key = k.Reveal()
	}
	c := simulatorClient{name: MockAntiFraudName, baseURL: m.BaseURL, authorization: bearer(key), http: m.HTTP, timeout: 10 * time.Second, maxAnswer: 1 << 20}
	status, b, err := c.do(ctx, http.MethodPost, path, raw, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", MockAntiFraudName, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s %s: %w %d", MockAntiFraudName, path, errAntiFraudStatus, status)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not JSON: %w", MockAntiFraudName, path, err)
	}
	return nil
}
