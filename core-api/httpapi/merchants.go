package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/vaultclient"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/zone"
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
	p, err := a.Verifier.VerifyRequest(r)
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

func merchantAccountRoutes(rt *Router, d Deps) {
	h := merchantHandlers{d}
	rt.Handle("POST /merchant-accounts", h.create)
	rt.Handle("GET /merchant-accounts", h.list)
	rt.Handle("GET /merchant-accounts/{merchant_account_id}", h.get)
	rt.Handle("PUT /merchant-accounts/{merchant_account_id}", h.update)
	rt.Handle("DELETE /merchant-accounts/{merchant_account_id}", h.delete)
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
	if !coreapi.MerchantAccountIDPattern.MatchString(id) {
		return "", apierror.BadRequest("invalid merchant_account_id", apierror.Detail{
			Location: apierror.LocationPath, Pointer: "merchant_account_id",
			Message: "must match " + coreapi.MerchantAccountIDPattern.String(), Type: "value_error.str.regex",
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
	if err := in.Validate(); err != nil {
		return domainError(err, "merchant account")
	}
	if !p.CanAccessMerchant(*in.ID) {
		return apierror.Forbidden("this token may not act on merchant account " + *in.ID)
	}
	a, err := h.d.DB.CreateMerchantAccount(r.Context(), in, func(ctx context.Context) error {
		c, err := h.d.Vault.ReopenMerchantAccount(ctx, *in.ID)
		if err != nil {
			return vaultStepError(err, "could not reopen the id of a deleted account; nothing was created")
		}
		if used := usedRecords(c.Records); len(used) > 0 {
			return &vaultInUseError{used}
		}
		return nil
	})
	if vu := (*vaultInUseError)(nil); errors.As(err, &vu) {
		return apierror.New(http.StatusConflict, CodeResourceInUse, "vault-proxy still holds records of the deleted merchant account "+
			*in.ID+" under its id ("+usageList(vu.records)+"); nothing was created")
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
	a, err := h.d.DB.FindMerchantAccount(r.Context(), id)
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
	only := p.MerchantAccountIDs
	bind := "*"
	if only != nil {
		bind = "only:" + strings.Join(only, ",")
	}
	page, err := h.d.Cursors.ParseRequest(r.URL.Query(), "merchant-accounts", pagination.Binding(bind))
	if err != nil {
		return err
	}
	rows, err := h.d.DB.ListMerchantAccounts(r.Context(), only, page)
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
	if err := in.Validate(); err != nil {
		return domainError(err, "merchant account")
	}
	a, err := h.d.DB.UpdateMerchantAccount(r.Context(), id, in)
	if err != nil {
		return domainError(err, "merchant account")
	}
	return WriteJSON(w, http.StatusOK, merchantAccountOut(*a))
}

// delete refuses (409 resource_in_use) while the account has buyers or any
// other record, in core-api or in vault-proxy: deleting a tenant is never
// a cascade, and what the vault holds under the account's id (forwarding
// credentials, cards, network tokens) would otherwise pass to a later
// account with the same id. Once core-api's records allow it, vault-proxy
// closes the id inside the deleting transaction: it refuses while it holds
// anything, and stores nothing for the id after it (migration 011 of
// vault-proxy). A closure whose deletion then fails here is cancelled.
func (h merchantHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := h.target(r, ScopeMerchantAccountsWrite)
	if err != nil {
		return err
	}
	ctx := r.Context()
	attempt := uuid.NewString()
	closed := false
	txID, err := h.d.DB.DeleteMerchantAccount(ctx, id, func(ctx context.Context) error {
		// Not cut short by the client, so that the answer usually comes.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultCloseWait)
		defer cancel()
		c, err := h.d.Vault.CloseMerchantAccount(cctx, id, attempt)
		if err != nil {
			if mayHaveChanged(err) {
				h.cancelClosure(ctx, id, attempt)
			}
			return vaultStepError(err, "could not say what it holds for this account; nothing was deleted")
		}
		if !c.Closed {
			return &vaultInUseError{usedRecords(c.Records)}
		}
		closed = true
		return nil
	})
	if err != nil && closed {
		err = h.afterFailedDeletion(ctx, id, attempt, txID, err)
	}
	if iu := (*coreapi.InUseError)(nil); errors.As(err, &iu) {
		return accountInUse(id, iu.Remaining, h.vaultUsage(ctx, id))
	}
	if vu := (*vaultInUseError)(nil); errors.As(err, &vu) {
		return accountInUse(id, nil, vu.records)
	}
	if err != nil {
		return domainError(err, "merchant account")
	}
	h.d.Auth.Forget(id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// vaultInUseError is vault-proxy's refusal to close an account it holds
// records for.
type vaultInUseError struct{ records []coreapi.RecordCount }

func (e *vaultInUseError) Error() string { return "merchant account: in use in vault-proxy" }

// usedRecords keeps the kinds with a count above zero.
func usedRecords(records []zone.UsageRecord) []coreapi.RecordCount {
	var in []coreapi.RecordCount
	for _, u := range records {
		if u.Count > 0 {
			in = append(in, coreapi.RecordCount(u))
		}
	}
	return in
}

// vaultUsage is what vault-proxy holds for an account that core-api's own
// records already keep, to name it in the same answer; nil when
// vault-proxy cannot say (the answer is 409 either way).
func (h merchantHandlers) vaultUsage(ctx context.Context, id string) []coreapi.RecordCount {
	u, err := h.d.Vault.MerchantAccountUsage(ctx, id)
	if err != nil {
		h.d.Log.WarnContext(ctx, "vault-proxy did not say what it holds for a merchant account in use", "merchant_account_id", id, "error", err)
		return nil
	}
	return usedRecords(u.Records)
}

// afterFailedDeletion settles a deletion whose transaction failed after
// vault-proxy closed the account: once the transaction has ended, a
// rollback cancels the attempt's closure, and a commit whose answer was
// lost is the deletion done (nil). When the outcome cannot be learnt the
// closure is kept (the account may be gone) and the error logged: a live
// account left closed takes no new payment method or vault-forward config
// until it is deleted again or the closure is cancelled by hand.
func (h merchantHandlers) afterFailedDeletion(ctx context.Context, id, attempt, txID string, err error) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultCloseWait)
	defer cancel()
	committed, oerr := h.d.DB.TxCommitted(dctx, txID)
	switch {
	case oerr != nil:
		h.d.Log.ErrorContext(ctx, "a merchant account's deletion failed with an unknown outcome; vault-proxy keeps it closed",
			"merchant_account_id", id, "attempt_id", attempt, "error", oerr)
	case committed:
		return nil
	default:
		h.cancelClosure(ctx, id, attempt)
	}
	return err
}

// vaultCloseWait bounds each call to vault-proxy about a deletion (the
// close, its cancellation), made while the account's row is locked.
// vault-proxy gives each at most 5 s, its lock wait included.
const vaultCloseWait = 10 * time.Second

// mayHaveChanged reports whether a failed call to vault-proxy may still
// have done its work: no answer, or a server error, as opposed to a
// refusal it stands by.
func mayHaveChanged(err error) bool {
	var e *apierror.Error
	return !errors.Is(err, vaultclient.ErrNotFound) && !errors.As(err, &e)
}

// cancelClosure undoes vault-proxy's closure of the account by deletion
// attempt attempt, which failed after it. The attempt's id fences it: it
// undoes no other deletion's closure, and a close of this attempt arriving
// after it is refused. It runs whatever the request's fate; an account it
// cannot reopen takes no new payment method or vault-forward config until
// it is deleted (DELETE again) or the closure is cancelled by hand
// (docs/api-conventions.md).
func (h merchantHandlers) cancelClosure(ctx context.Context, id, attempt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultCloseWait)
	defer cancel()
	if err := h.d.Vault.CancelCloseMerchantAccount(ctx, id, attempt); err != nil {
		h.d.Log.ErrorContext(ctx, "a merchant account whose deletion failed may stay closed in vault-proxy; delete it again or cancel the closure",
			"merchant_account_id", id, "attempt_id", attempt, "error", err)
	}
}

// vaultStepError maps the error of a call to vault-proxy made inside a
// transaction, so it comes out of the transaction as its answer: a
// vault-proxy without the route cannot answer for the account, so the step
// fails closed, with what ("vault-proxy " + what).
func vaultStepError(err error, what string) error {
	if errors.Is(err, vaultclient.ErrNotFound) {
		return &upstreamError{apierror.BadGateway("vault-proxy " + what), err}
	}
	return vaultProxyError(err)
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
