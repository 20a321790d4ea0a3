package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/pagination"
)

// Scopes of the merchant account administration routes.
const (
	ScopeMerchantAccountsRead  = "merchant-accounts.read"
	ScopeMerchantAccountsWrite = "merchant-accounts.write"
)

// AuthorizeInstance checks r for scope on routes that act on the instance
// rather than within one merchant account (merchant account
// administration): a valid bearer token holding scope. The merchant account
// header is not read; the caller checks Principal.CanAccessMerchant for the
// account it touches.
func (a *Auth) AuthorizeInstance(r *http.Request, scope string) (*auth.Principal, error) {
	p, err := a.verify(r)
	if err != nil {
		return nil, err
	}
	if err := p.Require(scope); err != nil {
		return nil, err
	}
	return p, nil
}

type merchantAccountJSON struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

func merchantAccountOut(a coreapi.MerchantAccount) merchantAccountJSON {
	return merchantAccountJSON{
		Type: "merchant-account", ID: a.ID, DisplayName: a.DisplayName,
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt),
	}
}

type merchantHandlers struct{ d Deps }

// target authorizes r for scope on the account named in the path. A token
// restricted to other accounts gets 403 whether or not the account exists.
func (h merchantHandlers) target(r *http.Request, scope string) (string, error) {
	p, err := h.d.Auth.AuthorizeInstance(r, scope)
	if err != nil {
		return "", err
	}
	id := r.PathValue("merchant_account_id")
	if !accountid.Valid(id) {
		return "", apierror.BadRequest("invalid merchant_account_id", apierror.Detail{
			Location: apierror.LocationPath, Pointer: "merchant_account_id",
			Message: accountid.Mismatch, Type: accountid.MismatchType,
		})
	}
	if !p.CanAccessMerchant(id) {
		return "", apierror.Forbidden("this token may not act on merchant account " + id)
	}
	return id, nil
}

func (h merchantHandlers) create(w http.ResponseWriter, r *http.Request) error {
	p, err := h.d.Auth.AuthorizeInstance(r, ScopeMerchantAccountsWrite)
	if err != nil {
		return err
	}
	var in coreapi.NewMerchantAccount
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	// Validated here as well, before the service does: a token's
	// restriction is judged on a well-formed id, and bad values are a 400
	// whoever sends them.
	if err := in.Validate(); err != nil {
		return domainError(err, "merchant account")
	}
	if !p.CanAccessMerchant(*in.ID) {
		return apierror.Forbidden("this token may not act on merchant account " + *in.ID)
	}
	a, err := h.d.MerchantAccounts.Create(r.Context(), in)
	if vu := (*coreapi.VaultProxyInUseError)(nil); errors.As(err, &vu) {
		return apierror.New(http.StatusConflict, CodeResourceInUse, "vault-proxy still holds records of the deleted merchant account "+
			*in.ID+" under its id ("+usageList(vu.Records)+"); nothing was created")
	}
	if err != nil {
		return domainError(err, "merchant account")
	}
	return WriteJSON(w, http.StatusCreated, merchantAccountOut(*a))
}

func (h merchantHandlers) get(w http.ResponseWriter, r *http.Request) error {
	id, err := h.target(r, ScopeMerchantAccountsRead)
	if err != nil {
		return err
	}
	a, err := h.d.MerchantAccounts.Get(r.Context(), id)
	if err != nil {
		return domainError(err, "merchant account")
	}
	return WriteJSON(w, http.StatusOK, merchantAccountOut(*a))
}

func (h merchantHandlers) list(w http.ResponseWriter, r *http.Request) error {
	p, err := h.d.Auth.AuthorizeInstance(r, ScopeMerchantAccountsRead)
	if err != nil {
		return err
	}
	// A restricted token lists only its accounts, and its cursors are bound
	// to that restriction.
	var only []string // nil: every account
	bind := "*"
	if !p.AllMerchantAccounts {
		only = p.MerchantAccountIDs
		bind = "only:" + strings.Join(only, ",")
	}
	page, err := h.d.Cursors.ParseRequest(r.URL.Query(), "merchant-accounts", pagination.Binding(bind))
	if err != nil {
		return err
	}
	rows, err := h.d.MerchantAccounts.List(r.Context(), only, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(a coreapi.MerchantAccount) pagination.Key {
		return pagination.Key{Time: a.CreatedAt, ID: a.ID}
	})
	out := pagination.Envelope[merchantAccountJSON]{
		Items: make([]merchantAccountJSON, len(env.Items)), Limit: env.Limit,
		NextCursor: env.NextCursor, PreviousCursor: env.PreviousCursor,
	}
	for i, a := range env.Items {
		out.Items[i] = merchantAccountOut(a)
	}
	return WriteJSON(w, http.StatusOK, out)
}

func (h merchantHandlers) update(w http.ResponseWriter, r *http.Request) error {
	id, err := h.target(r, ScopeMerchantAccountsWrite)
	if err != nil {
		return err
	}
	var in coreapi.MerchantAccountUpdate
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	a, err := h.d.MerchantAccounts.Update(r.Context(), id, in)
	if err != nil {
		return domainError(err, "merchant account")
	}
	return WriteJSON(w, http.StatusOK, merchantAccountOut(*a))
}

// delete deletes the account (merchants.Service.Delete): a 409
// resource_in_use names what keeps it, in either zone.
func (h merchantHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := h.target(r, ScopeMerchantAccountsWrite)
	if err != nil {
		return err
	}
	err = h.d.MerchantAccounts.Delete(r.Context(), id)
	if iu := (*coreapi.MerchantAccountInUseError)(nil); errors.As(err, &iu) {
		return accountInUse(id, iu.Core, iu.VaultProxy)
	}
	if vu := (*coreapi.VaultProxyInUseError)(nil); errors.As(err, &vu) {
		return accountInUse(id, nil, vu.Records)
	}
	if err != nil {
		return domainError(err, "merchant account")
	}
	h.d.Auth.Forget(id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// accountInUse is the 409 resource_in_use naming what keeps account id:
// "merchant account acme is still in use (core-api: buyers: 2;
// vault-proxy: vault-forward-configs: 1); ...".
func accountInUse(id string, core, vault []coreapi.RecordCount) error {
	var parts []string
	for _, part := range []struct {
		zone string
		in   []coreapi.RecordCount
	}{{"core-api", core}, {"vault-proxy", vault}} {
		if len(part.in) > 0 {
			parts = append(parts, part.zone+": "+usageList(part.in))
		}
	}
	msg := "merchant account " + id + " is still in use"
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, "; ") + ")"
	}
	return apierror.New(http.StatusConflict, CodeResourceInUse, msg+"; delete those first: deleting a merchant account is never a cascade")
}

// usageList names each kind with its count: "buyers: 2, mandates: 1".
func usageList(in []coreapi.RecordCount) string {
	items := make([]string, len(in))
	for i, u := range in {
		items[i] = u.Resource + ": " + strconv.FormatInt(u.Count, 10)
	}
	return strings.Join(items, ", ")
}
