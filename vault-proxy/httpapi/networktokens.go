package httpapi

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
)

// Scopes of the network token routes.
const (
	ScopeNetworkTokensRead  = "network-tokens.read"
	ScopeNetworkTokensWrite = "network-tokens.write"
)

// NetworkTokens serves a card's network tokens on the public listener
// ({pm} is payment_method_id, {nt} network_token_id):
//
//	GET    /payment-methods/{pm}/network-tokens               network-tokens.read   200 {"items": [...]}
//	POST   /payment-methods/{pm}/network-tokens               network-tokens.write  201 new, 200 existing
//	GET    /payment-methods/{pm}/network-tokens/{nt}          network-tokens.read   200
//	POST   /payment-methods/{pm}/network-tokens/{nt}/suspend  network-tokens.write  200
//	POST   /payment-methods/{pm}/network-tokens/{nt}/resume   network-tokens.write  200
//	DELETE /payment-methods/{pm}/network-tokens/{nt}          network-tokens.write  204
//
// (A write scope also allows reading.) Another merchant account's payment
// method or token is 404; a payment method that is not a card is 400; a
// refused provisioning is 422 network_token_provisioning_failed; a
// lifecycle change of a deleted token is 422 network_token_deleted; a TSP
// failure is 502 and changes nothing.
//
// A response never carries the token value: a network token is a payment
// credential, so only its last 4 digits (label) are shown, like a card's.
type NetworkTokens struct {
	Service *networktoken.Service
	Auth    *Authenticator
}

type networkTokenJSON struct {
	Type              string `json:"type"`
	ID                string `json:"id"`
	MerchantAccountID string `json:"merchant_account_id"`
	PaymentMethodID   string `json:"payment_method_id"`
	Provider          string `json:"provider"`
	Status            string `json:"status"`
	Scheme            string `json:"scheme"`
	Label             string `json:"label"`           // last 4 digits of the token
	ExpirationDate    string `json:"expiration_date"` // MM/YY
	CreatedAt         string `json:"created_at"`
	UpdatedAt         string `json:"updated_at"`
}

func networkTokenOut(t *networktoken.NetworkToken) networkTokenJSON {
	return networkTokenJSON{
		Type: "network-token", ID: t.ID.String(), MerchantAccountID: t.MerchantAccountID, PaymentMethodID: t.PaymentMethodID.String(),
		Provider: t.Provider, Status: string(t.Status), Scheme: t.Scheme, Label: t.Last4, ExpirationDate: t.Expiry.String(),
		CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: t.UpdatedAt.UTC().Format(time.RFC3339),
	}
}

// networkTokenError maps the service's errors to the envelope. Provider
// error texts are logged by the router (as server errors) or dropped, never
// echoed.
func networkTokenError(err error, what string) error {
	var pe *networktoken.ProvisioningError
	var prov *networktoken.ProviderError
	switch {
	case errors.As(err, &pe):
		return apierror.New(fasthttp.StatusUnprocessableEntity, "network_token_provisioning_failed",
			"no network token could be provisioned: "+pe.Message, apierror.Detail{
				Location: apierror.LocationPath, Pointer: "payment_method_id", Message: pe.Message, Type: "network_token." + pe.Reason,
			})
	case errors.Is(err, vaultproxy.ErrNotFound):
		return apierror.NotFound(what + " not found")
	case errors.Is(err, networktoken.ErrNotCard):
		return apierror.BadRequest("network tokens exist for card payment methods only", apierror.Detail{
			Location: apierror.LocationPath, Pointer: "payment_method_id", Message: "the payment method is not a card", Type: "value_error.payment_method.not_card",
		})
	case errors.Is(err, networktoken.ErrDeleted):
		return apierror.New(fasthttp.StatusUnprocessableEntity, "network_token_deleted", "the network token is deleted; provision a new one")
	case errors.Is(err, networktoken.ErrConflict):
		return apierror.ConcurrentRequest("the network token changed while this request ran; retry")
	case errors.As(err, &prov):
		return apierror.BadGateway("the token service provider failed; nothing was changed")
	}
	return err
}

func (h *NetworkTokens) params(ctx *fasthttp.RequestCtx, scope string, withToken bool) (vaulting.Caller, uuid.UUID, uuid.UUID, error) {
	c, err := h.Auth.Authorize(ctx, scope)
	if err != nil {
		return vaulting.Caller{}, uuid.Nil, uuid.Nil, err
	}
	pm, err := pathUUID(ctx, "payment_method_id")
	if err != nil {
		return vaulting.Caller{}, uuid.Nil, uuid.Nil, err
	}
	var nt uuid.UUID
	if withToken {
		if nt, err = pathUUID(ctx, "network_token_id"); err != nil {
			return vaulting.Caller{}, uuid.Nil, uuid.Nil, err
		}
	}
	return vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(ctx)}, pm, nt, nil
}

// pathUUID reads a path parameter that must be a UUID; anything else is a
// 400 with a detail on it (docs/api-conventions.md).
func pathUUID(ctx *fasthttp.RequestCtx, name string) (uuid.UUID, error) {
	s, _ := ctx.UserValue(name).(string)
	id, err := uuid.Parse(s)
	// Canonical form only, as core-api takes ids (lower case, hyphens).
	if err != nil || s != id.String() {
		return uuid.Nil, apierror.BadRequest("invalid "+name, apierror.Detail{
			Location: apierror.LocationPath, Pointer: name, Message: "must be a UUID", Type: "type_error.uuid",
		})
	}
	return id, nil
}

// networkTokenTimeout bounds a network token request's database and token
// service calls. They run under requestContext, never the fasthttp
// RequestCtx itself, which has no deadline and is reused after shutdown.
const networkTokenTimeout = 30 * time.Second

// List answers GET /payment-methods/{id}/network-tokens.
func (h *NetworkTokens) List(ctx *fasthttp.RequestCtx) error {
	c, pm, _, err := h.params(ctx, ScopeNetworkTokensRead, false)
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, networkTokenTimeout)
	defer cancel()
	ts, err := h.Service.List(rctx, c, pm)
	if err != nil {
		return networkTokenError(err, "payment method")
	}
	items := make([]networkTokenJSON, len(ts))
	for i, t := range ts {
		items[i] = networkTokenOut(t)
	}
	return WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"items": items})
}

// Get answers GET /payment-methods/{id}/network-tokens/{nt_id}.
func (h *NetworkTokens) Get(ctx *fasthttp.RequestCtx) error {
	c, pm, nt, err := h.params(ctx, ScopeNetworkTokensRead, true)
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, networkTokenTimeout)
	defer cancel()
	t, err := h.Service.Get(rctx, c, pm, nt)
	if err != nil {
		return networkTokenError(err, "network token")
	}
	return WriteJSON(ctx, fasthttp.StatusOK, networkTokenOut(t))
}

// emptySchema is the body of the routes that take an empty body or {}.
var emptySchema = strictjson.For[struct{}]()

// Provision answers POST /payment-methods/{id}/network-tokens: 201 with a
// newly provisioned token, 200 with the payment method's existing one
// (active or suspended). The body is empty or {}.
func (h *NetworkTokens) Provision(ctx *fasthttp.RequestCtx) error {
	c, pm, _, err := h.params(ctx, ScopeNetworkTokensWrite, false)
	if err != nil {
		return err
	}
	if body := ctx.Request.Body(); len(body) > 0 {
		if _, err := strictObject(body, emptySchema); err != nil {
			return err
		}
	}
	rctx, cancel := requestContext(ctx, networkTokenTimeout)
	defer cancel()
	t, created, err := h.Service.Provision(rctx, c, pm)
	if err != nil {
		return networkTokenError(err, "payment method")
	}
	status := fasthttp.StatusOK
	if created {
		status = fasthttp.StatusCreated
	}
	return WriteJSON(ctx, status, networkTokenOut(t))
}

// Suspend answers POST /payment-methods/{id}/network-tokens/{nt_id}/suspend.
func (h *NetworkTokens) Suspend(ctx *fasthttp.RequestCtx) error {
	return h.change(ctx, h.Service.Suspend)
}

// Resume answers POST /payment-methods/{id}/network-tokens/{nt_id}/resume.
func (h *NetworkTokens) Resume(ctx *fasthttp.RequestCtx) error {
	return h.change(ctx, h.Service.Resume)
}

func (h *NetworkTokens) change(ctx *fasthttp.RequestCtx,
	op func(context.Context, vaulting.Caller, uuid.UUID, uuid.UUID) (*networktoken.NetworkToken, error)) error {
	c, pm, nt, err := h.params(ctx, ScopeNetworkTokensWrite, true)
	if err != nil {
		return err
	}
	if body := ctx.Request.Body(); len(body) > 0 {
		if _, err := strictObject(body, emptySchema); err != nil {
			return err
		}
	}
	rctx, cancel := requestContext(ctx, networkTokenTimeout)
	defer cancel()
	t, err := op(rctx, c, pm, nt)
	if err != nil {
		return networkTokenError(err, "network token")
	}
	return WriteJSON(ctx, fasthttp.StatusOK, networkTokenOut(t))
}

// Delete answers DELETE /payment-methods/{id}/network-tokens/{nt_id}.
func (h *NetworkTokens) Delete(ctx *fasthttp.RequestCtx) error {
	c, pm, nt, err := h.params(ctx, ScopeNetworkTokensWrite, true)
	if err != nil {
		return err
	}
	rctx, cancel := requestContext(ctx, networkTokenTimeout)
	defer cancel()
	if err := h.Service.Delete(rctx, c, pm, nt); err != nil {
		return networkTokenError(err, "network token")
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
