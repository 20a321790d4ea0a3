// Package vaultclient is core-api's side of the zone contract
// (shared/zone): it calls vault-proxy's internal listener over mutual TLS.
// It never sees card data: it asks by token and receives display data.
package vaultclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/requestid"
	"github.com/payorch/shared/zone"
)

// Client calls vault-proxy.
type Client struct {
	HTTP *http.Client // carries core-api's client certificate
	Base string       // https://vault-proxy:9443
}

// ErrNotFound is a token the merchant account does not have (or a route
// vault-proxy does not have): the domain's coreapi.ErrVaultProxyNotFound.
var ErrNotFound = coreapi.ErrVaultProxyNotFound

// ErrNoMerchantAccount is a call that names no merchant account. It is
// refused before it is sent: vault-proxy's internal listener has no
// default account.
var ErrNoMerchantAccount = errors.New("vaultclient: no merchant account named")

// do makes a call in merchant's account, which every internal route but
// the reconciliation's list takes from the header.
func (c *Client) do(ctx context.Context, method, path, merchant, actor string, in, out any) error {
	if merchant == "" {
		return fmt.Errorf("%w: %s %s", ErrNoMerchantAccount, method, path)
	}
	return c.roundTrip(ctx, method, path, merchant, actor, in, out)
}

// roundTrip sends the call, with the merchant account header when merchant
// is set.
func (c *Client) roundTrip(ctx context.Context, method, path, merchant, actor string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if merchant != "" {
		req.Header.Set(accountid.Header, merchant)
	}
	if actor != "" {
		req.Header.Set(zone.ActorHeader, actor)
	}
	if id := requestid.FromContext(ctx); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("vaultclient: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		// vault-proxy's envelope is safe to pass on: it never carries card data.
		if e, perr := apierror.Parse(raw); perr == nil {
			return fmt.Errorf("%w: %w", coreapi.ErrVaultProxyRefused, e)
		}
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode}
	case resp.StatusCode >= 300:
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode}
	}
	if out != nil && len(raw) > 0 {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// StatusError is an answer of vault-proxy that is neither a success nor an
// error envelope to pass on (a 5xx: its card vault, Vault or a token
// service failed): vault-proxy was reached.
type StatusError struct {
	Method, Path string
	Status       int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("vaultclient: %s %s: status %d", e.Method, e.Path, e.Status)
}

func cardPath(token string) string {
	return zone.CardPathPrefix + strings.TrimSpace(token)
}

// Card returns a vaulted card's display data.
func (c *Client) Card(ctx context.Context, merchant, token string) (*zone.CardMetadata, error) {
	var m zone.CardMetadata
	if err := c.do(ctx, http.MethodGet, cardPath(token), merchant, "", nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// SecurityCodeHeldFor reports whether vault-proxy holds the security code
// of the card of token for the authorization that resumes transaction id
// after its 3-D Secure challenge.
func (c *Client) SecurityCodeHeldFor(ctx context.Context, merchant, token, id string) (bool, error) {
	var m zone.CardMetadata
	path := cardPath(token) + "?" + url.Values{zone.SecurityCodeForParam: {id}}.Encode()
	if err := c.do(ctx, http.MethodGet, path, merchant, "", nil, &m); err != nil {
		return false, err
	}
	return m.SecurityCodeHeld, nil
}

// ForgetSecurityCodeFor has vault-proxy wipe the security code of the card
// of token it holds for the authorization that would resume transaction
// id after its 3-D Secure challenge: the challenge ended without one.
// vault-proxy answers 204 whether or not it held one.
func (c *Client) ForgetSecurityCodeFor(ctx context.Context, merchant, token, id string) error {
	return c.do(ctx, http.MethodDelete, zone.SecurityCodeHold(strings.TrimSpace(token), id), merchant, "", nil, nil)
}

// UpdateExpiry changes a vaulted card's expiry before core-api answers, so
// expiry placeholders use the new value at once.
func (c *Client) UpdateExpiry(ctx context.Context, merchant, actor, token, expiry string) error {
	return c.do(ctx, http.MethodPut, cardPath(token), merchant, actor, zone.ExpiryUpdate{ExpirationDate: expiry}, nil)
}

// Delete crypto-shreds a vaulted card.
func (c *Client) Delete(ctx context.Context, merchant, actor, token string) error {
	return c.do(ctx, http.MethodDelete, cardPath(token), merchant, actor, nil, nil)
}

// Detokenize asks vault-proxy to make a call with card data filled in.
func (c *Client) Detokenize(ctx context.Context, merchant, actor string, r zone.DetokenizeRequest) (*zone.DetokenizeResponse, error) {
	var out zone.DetokenizeResponse
	if err := c.do(ctx, http.MethodPost, zone.DetokenizePath, merchant, actor, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VaultedRecords lists one page of the records vault-proxy holds per
// token, vaulted before q.CreatedBefore and at least its own minimum age
// ago, in token order (for the vault reconciliation).
func (c *Client) VaultedRecords(ctx context.Context, q coreapi.VaultedRecordsQuery) (*zone.VaultedRecordPage, error) {
	v := url.Values{zone.CreatedBeforeParam: {q.CreatedBefore.UTC().Format(time.RFC3339Nano)}}
	if q.MerchantAccountID != "" {
		v.Set(zone.MerchantAccountParam, q.MerchantAccountID)
	}
	if q.After != "" {
		v.Set(zone.AfterParam, q.After)
	}
	if q.Limit > 0 {
		v.Set(zone.LimitParam, strconv.Itoa(q.Limit))
	}
	var page zone.VaultedRecordPage
	// The one internal route across merchant accounts: the account, if
	// any, is the query's filter, not the header's scope.
	if err := c.roundTrip(ctx, http.MethodGet, zone.ReconcileRecordsPath+"?"+v.Encode(), "", "", nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// ShredUnclaimed asks vault-proxy to crypto-shred a record no payment
// method holds: ErrNotFound when it is gone already, an *apierror.Error
// 422 while it is younger than vault-proxy's minimum age.
func (c *Client) ShredUnclaimed(ctx context.Context, merchant, actor, token string) error {
	err := c.do(ctx, http.MethodDelete, zone.ReconcileRecordPathPrefix+strings.TrimSpace(token), merchant, actor, nil, nil)
	if e := (*apierror.Error)(nil); errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity {
		return fmt.Errorf("%w: %w", coreapi.ErrVaultedRecordTooYoung, err)
	}
	return err
}

// MerchantAccountUsage asks vault-proxy what it still holds for merchant,
// to name it beside core-api's own records when those keep the account
// from being deleted.
func (c *Client) MerchantAccountUsage(ctx context.Context, merchant string) (*zone.MerchantAccountUsage, error) {
	var u zone.MerchantAccountUsage
	if err := c.do(ctx, http.MethodGet, zone.MerchantAccountPath(zone.MerchantAccountUsagePath, merchant), merchant, "", nil, &u); err != nil {
		return nil, err
	}
	if u.MerchantAccountID != merchant {
		return nil, fmt.Errorf("vaultclient: usage of %q answered for %q", merchant, u.MerchantAccountID)
	}
	return &u, nil
}

// CloseMerchantAccount asks vault-proxy to close merchant for deletion
// attempt attempt: it does only if it holds nothing for the account, and
// says so.
func (c *Client) CloseMerchantAccount(ctx context.Context, merchant, attempt string) (*zone.MerchantAccountClosure, error) {
	return c.closure(ctx, merchant, "close", zone.MerchantAccountClosePath, zone.MerchantAccountClosureAttempt{AttemptID: attempt})
}

// closure makes the call action (close or reopen) at path, one of zone's
// MerchantAccount*Path routes.
func (c *Client) closure(ctx context.Context, merchant, action, path string, in any) (*zone.MerchantAccountClosure, error) {
	var u zone.MerchantAccountClosure
	if err := c.do(ctx, http.MethodPost, zone.MerchantAccountPath(path, merchant), merchant, "", in, &u); err != nil {
		return nil, err
	}
	if u.MerchantAccountID != merchant {
		// An answer about another account would let a deletion through.
		return nil, fmt.Errorf("vaultclient: %s of %q answered for %q", action, merchant, u.MerchantAccountID)
	}
	return &u, nil
}

// ReopenMerchantAccount tells vault-proxy a new account has a deleted
// account's id. vault-proxy refuses while it still holds anything under
// the id: Records then names it.
func (c *Client) ReopenMerchantAccount(ctx context.Context, merchant string) (*zone.MerchantAccountClosure, error) {
	return c.closure(ctx, merchant, "reopen", zone.MerchantAccountReopenPath, nil)
}

// CancelCloseMerchantAccount tells vault-proxy that deletion attempt
// attempt failed: its closure, and only its, is undone, whenever this
// arrives.
func (c *Client) CancelCloseMerchantAccount(ctx context.Context, merchant, attempt string) error {
	return c.do(ctx, http.MethodPost, zone.MerchantAccountPath(zone.MerchantAccountCancelClosePath, merchant), merchant, "",
		zone.MerchantAccountClosureAttempt{AttemptID: attempt}, nil)
}

// Ready asks vault-proxy's internal listener whether it, its database and
// its Vault are ready: core-api never talks to Vault itself.
func (c *Client) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+zone.ReadyPath, nil)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("vault-proxy readyz: status %d", resp.StatusCode)
	}
	return nil
}
