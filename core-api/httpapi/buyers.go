package httpapi

import (
	"net/http"
	"net/url"
	"unicode/utf8"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/pgtext"
)

// Scopes of the buyer routes.
const (
	ScopeBuyersRead  = "buyers.read"
	ScopeBuyersWrite = "buyers.write"
)

// buyerJSON is a buyer on the wire (docs/api-conventions.md, "Buyers").
type buyerJSON struct {
	Type               string                  `json:"type"`
	ID                 string                  `json:"id"`
	MerchantAccountID  string                  `json:"merchant_account_id"`
	DisplayName        *string                 `json:"display_name"`
	ExternalIdentifier *string                 `json:"external_identifier"`
	AccountNumber      *string                 `json:"account_number"`
	BillingDetails     *coreapi.BillingDetails `json:"billing_details"`
	CreatedAt          string                  `json:"created_at"`
	UpdatedAt          string                  `json:"updated_at"`
}

func buyerOut(b *coreapi.Buyer) buyerJSON {
	return buyerJSON{
		Type: "buyer", ID: b.ID, MerchantAccountID: b.MerchantAccountID,
		DisplayName: b.DisplayName, ExternalIdentifier: b.ExternalIdentifier, AccountNumber: b.AccountNumber,
		BillingDetails: b.BillingDetails,
		CreatedAt:      timestamp(b.CreatedAt), UpdatedAt: timestamp(b.UpdatedAt),
	}
}

// buyerSummaryJSON is a buyer in a list (docs/api-conventions.md: id, type,
// display_name, external_identifier, created_at, updated_at). The list
// handler writes it by hand (appendBuyerPage); this type is the reference
// it must match.
type buyerSummaryJSON struct {
	Type               string  `json:"type"`
	ID                 string  `json:"id"`
	DisplayName        *string `json:"display_name"`
	ExternalIdentifier *string `json:"external_identifier"`
	CreatedAt          string  `json:"created_at"`
	UpdatedAt          string  `json:"updated_at"`
}

type buyerHandlers struct{ d Deps }

func (h buyerHandlers) create(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeBuyersWrite)
	if err != nil {
		return err
	}
	var in coreapi.BuyerFields
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	b, err := h.d.Buyers.Create(r.Context(), c.MerchantAccountID, in)
	if err != nil {
		return domainError(err, "buyer")
	}
	return WriteJSON(w, http.StatusCreated, buyerOut(b))
}

func (h buyerHandlers) get(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeBuyersRead, "buyer_id")
	if err != nil {
		return err
	}
	b, err := h.d.Buyers.Get(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "buyer")
	}
	return WriteJSON(w, http.StatusOK, buyerOut(b))
}

func (h buyerHandlers) update(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeBuyersWrite, "buyer_id")
	if err != nil {
		return err
	}
	var in coreapi.BuyerFields
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	b, err := h.d.Buyers.Update(r.Context(), c.MerchantAccountID, id, in)
	if err != nil {
		return domainError(err, "buyer")
	}
	return WriteJSON(w, http.StatusOK, buyerOut(b))
}

func (h buyerHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeBuyersWrite, "buyer_id")
	if err != nil {
		return err
	}
	if err := h.d.Buyers.Delete(r.Context(), c.MerchantAccountID, id); err != nil {
		return domainError(err, "buyer")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// list serves GET /buyers?limit&cursor&search&external_identifier. A
// cursor is bound to the merchant account and the filters it was made
// with.
func (h buyerHandlers) list(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeBuyersRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var f coreapi.BuyerFilter
	if f.Search, err = textParam(q, "search"); err != nil {
		return err
	}
	if f.ExternalIdentifier, err = textParam(q, "external_identifier"); err != nil {
		return err
	}
	page, err := h.d.Cursors.ParseRequest(q, "buyers",
		pagination.Binding(c.MerchantAccountID, f.Search, f.ExternalIdentifier))
	if err != nil {
		return err
	}
	rows, err := h.d.Buyers.List(r.Context(), c.MerchantAccountID, f, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(b coreapi.Buyer) pagination.Key {
		return pagination.Key{Time: b.CreatedAt, ID: b.ID}
	})
	return writeAppendedJSON(w, http.StatusOK, func(b []byte) []byte { return appendBuyerPage(b, env) })
}

// appendBuyerPage appends env as json.Marshal writes a
// pagination.Envelope[buyerSummaryJSON] (jsonappend_test.go holds them to
// it): the list is the hot path, and this skips encoding/json's reflection
// and an intermediate slice of structs.
func appendBuyerPage(b []byte, env pagination.Envelope[coreapi.Buyer]) []byte {
	b = append(b, `{"items":[`...)
	for i := range env.Items {
		x := &env.Items[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"buyer","id":`...)
		b = appendJSONString(b, x.ID)
		b = append(b, `,"display_name":`...)
		b = appendJSONStringPtr(b, x.DisplayName)
		b = append(b, `,"external_identifier":`...)
		b = appendJSONStringPtr(b, x.ExternalIdentifier)
		b = append(b, `,"created_at":`...)
		b = appendTimestampJSON(b, x.CreatedAt)
		b = append(b, `,"updated_at":`...)
		b = appendTimestampJSON(b, x.UpdatedAt)
		b = append(b, '}')
	}
	b = append(b, `],"limit":`...)
	b = appendInt(b, env.Limit)
	b = append(b, `,"next_cursor":`...)
	b = appendJSONStringPtr(b, env.NextCursor)
	b = append(b, `,"previous_cursor":`...)
	b = appendJSONStringPtr(b, env.PreviousCursor)
	return append(b, '}')
}

// textParam reads an optional text query parameter: absent is "", present
// it must be given once and be 1..200 characters.
func textParam(q url.Values, name string) (string, error) {
	vs, ok := q[name]
	if !ok {
		return "", nil
	}
	if n := utf8.RuneCountInString(vs[0]); len(vs) != 1 || n < coreapi.MinTextLen || n > coreapi.MaxTextLen {
		return "", apierror.BadRequest("invalid "+name, apierror.Detail{
			Location: apierror.LocationQuery, Pointer: name,
			Message: "must be given once, 1 to 200 characters", Type: "value_error.any_str.length",
		})
	}
	// PostgreSQL's text holds neither; the search would fail there as a 500.
	if !pgtext.Storable(vs[0]) {
		return "", apierror.BadRequest("invalid "+name, apierror.Detail{
			Location: apierror.LocationQuery, Pointer: name,
			Message: "must be valid UTF-8 without the NUL character (U+0000)", Type: "value_error.str.encoding",
		})
	}
	return vs[0], nil
}
