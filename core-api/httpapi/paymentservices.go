package httpapi

import (
	"encoding/json"
	"net/http"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
)

// Scopes of the payment service routes.
const (
	ScopePaymentServicesRead  = "payment-services.read"
	ScopePaymentServicesWrite = "payment-services.write"
)

// The payment service routes (docs/payment-services.md):
//
//	POST   /payment-services       write  {connector, method?, display_name?, active?, default?, settings?, credentials} -> 201
//	GET    /payment-services       read   ?limit=&cursor= -> page (newest first)
//	GET    /payment-services/{id}  read   -> payment service
//	PUT    /payment-services/{id}  write  {display_name?, active?, default?, settings?, credentials?} -> 200
//	DELETE /payment-services/{id}  write  -> 204
//
// Credentials are write-only: no answer carries them, only
// credentials_set, the names of the fields stored.
type paymentServiceHandlers struct{ d Deps }

// paymentServiceCreateJSON is the body of POST /payment-services.
type paymentServiceCreateJSON struct {
	Connector   string                   `json:"connector"`
	Method      string                   `json:"method"`
	DisplayName coreapi.Optional[string] `json:"display_name"`
	Active      coreapi.Optional[bool]   `json:"active"`
	Default     coreapi.Optional[bool]   `json:"default"`
	Settings    json.RawMessage          `json:"settings"`
	Credentials json.RawMessage          `json:"credentials"`
}

// paymentServiceUpdateJSON is the body of PUT /payment-services/{id}:
// connector and method are fixed (another processor is another payment
// service), so they are unknown fields here.
type paymentServiceUpdateJSON struct {
	DisplayName coreapi.Optional[string] `json:"display_name"`
	Active      coreapi.Optional[bool]   `json:"active"`
	Default     coreapi.Optional[bool]   `json:"default"`
	Settings    json.RawMessage          `json:"settings"`
	Credentials json.RawMessage          `json:"credentials"`
}

// paymentServiceJSON is a payment service on the wire.
type paymentServiceJSON struct {
	Type              string          `json:"type"`
	ID                string          `json:"id"`
	MerchantAccountID string          `json:"merchant_account_id"`
	Connector         string          `json:"connector"`
	Method            string          `json:"method"`
	DisplayName       *string         `json:"display_name"`
	Active            bool            `json:"active"`
	Default           bool            `json:"default"`
	Settings          json.RawMessage `json:"settings"`
	CredentialsSet    []string        `json:"credentials_set"`
	CreatedAt         string          `json:"created_at"`
	UpdatedAt         string          `json:"updated_at"`
}

func paymentServiceOut(ps *coreapi.PaymentService) paymentServiceJSON {
	set := ps.CredentialsSet
	if set == nil {
		set = []string{}
	}
	settings := ps.Settings
	if len(settings) == 0 {
		settings = json.RawMessage("{}")
	}
	return paymentServiceJSON{
		Type: "payment-service", ID: ps.ID, MerchantAccountID: ps.MerchantAccountID, Connector: ps.Connector,
		Method: ps.Method, DisplayName: ps.DisplayName, Active: ps.Active, Default: ps.Default,
		Settings: settings, CredentialsSet: set,
		CreatedAt: timestamp(ps.CreatedAt), UpdatedAt: timestamp(ps.UpdatedAt),
	}
}

func (h paymentServiceHandlers) create(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopePaymentServicesWrite)
	if err != nil {
		return err
	}
	var in paymentServiceCreateJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	ps, err := h.d.PaymentServices.Create(r.Context(), c.MerchantAccountID, coreapi.PaymentServiceFields{
		Connector: in.Connector, Method: in.Method, DisplayName: in.DisplayName, Active: in.Active, Default: in.Default,
		Settings: in.Settings, Credentials: in.Credentials,
	})
	if err != nil {
		return domainError(err, "payment service")
	}
	return WriteJSON(w, http.StatusCreated, paymentServiceOut(ps))
}

func (h paymentServiceHandlers) get(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopePaymentServicesRead, "payment_service_id")
	if err != nil {
		return err
	}
	ps, err := h.d.PaymentServices.Get(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "payment service")
	}
	return WriteJSON(w, http.StatusOK, paymentServiceOut(ps))
}

func (h paymentServiceHandlers) update(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopePaymentServicesWrite, "payment_service_id")
	if err != nil {
		return err
	}
	var in paymentServiceUpdateJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	ps, err := h.d.PaymentServices.Update(r.Context(), c.MerchantAccountID, id, coreapi.PaymentServiceFields{
		DisplayName: in.DisplayName, Active: in.Active, Default: in.Default, Settings: in.Settings, Credentials: in.Credentials,
	})
	if err != nil {
		return domainError(err, "payment service")
	}
	return WriteJSON(w, http.StatusOK, paymentServiceOut(ps))
}

func (h paymentServiceHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopePaymentServicesWrite, "payment_service_id")
	if err != nil {
		return err
	}
	if err := h.d.PaymentServices.Delete(r.Context(), c.MerchantAccountID, id); err != nil {
		return domainError(err, "payment service")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// list serves GET /payment-services?limit&cursor, newest first; a cursor
// is bound to the merchant account.
func (h paymentServiceHandlers) list(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopePaymentServicesRead)
	if err != nil {
		return err
	}
	page, err := h.d.Cursors.ParseRequest(r.URL.Query(), "payment-services", pagination.Binding(c.MerchantAccountID))
	if err != nil {
		return err
	}
	rows, err := h.d.PaymentServices.List(r.Context(), c.MerchantAccountID, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(ps coreapi.PaymentService) pagination.Key {
		return pagination.Key{Time: ps.CreatedAt, ID: ps.ID}
	})
	return WriteJSON(w, http.StatusOK, pageOf(env, paymentServiceOut))
}
