package httpapi

import (
	"net/http"

	"github.com/payorch/shared/zone"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// PublicHandlers are what the public listener's routes call; app builds
// them. Each resource's handlers live in their own file.
type PublicHandlers struct {
	Checks         []Check // readiness
	Cards          *Cards
	Audit          *Audit
	Forward        *Forward
	ForwardConfigs *ForwardConfigs
	NetworkTokens  *NetworkTokens
	// ThreeDSScenarios takes core-api's sandbox 3-D Secure scenario
	// writes, which may name a card.
	ThreeDSScenarios *ThreeDSScenarios
	Checkout         *Checkout
	SecureFields     *SecureFields
	Core             *Core // every other route is core-api's
}

// InternalHandlers are what the internal listener's routes (core-api's
// calls, shared/zone) call.
type InternalHandlers struct {
	Checks           []Check
	Cards            *Cards
	Detokenize       *Detokenize
	MerchantAccounts *MerchantAccounts
	Reconciliation   *Reconciliation
}

// PublicRoutes registers every route of the public listener on rt: this
// and InternalRoutes and AdminRoutes are the one list of vault-proxy's
// routes.
func PublicRoutes(rt *Router, h PublicHandlers) {
	rt.Health(h.Checks...)
	rt.Handle(fasthttp.MethodGet, "/openapi.json", OpenAPI)

	rt.Handle(fasthttp.MethodPost, "/payment-methods", h.Cards.CreatePaymentMethod)
	rt.Handle(fasthttp.MethodPost, zone.TransactionsPath, h.Cards.CreateTransaction)
	rt.Handle(fasthttp.MethodGet, "/audit-events", h.Audit.List)
	rt.Handle(fasthttp.MethodGet, "/audit-events/{id}", h.Audit.Get)
	rt.Handle(fasthttp.MethodPost, "/vault-forward", h.Forward.Handle)

	const config = "/vault-forward/configs/{id}"
	rt.Handle(fasthttp.MethodPost, "/vault-forward/configs", h.ForwardConfigs.Create)
	rt.Handle(fasthttp.MethodGet, "/vault-forward/configs", h.ForwardConfigs.List)
	rt.Handle(fasthttp.MethodGet, config, h.ForwardConfigs.Get)
	rt.Handle(fasthttp.MethodPut, config, h.ForwardConfigs.Update)
	rt.Handle(fasthttp.MethodDelete, config, h.ForwardConfigs.Delete)
	rt.Handle(fasthttp.MethodPost, config+"/authentications", h.ForwardConfigs.AddAuthentication)
	rt.Handle(fasthttp.MethodGet, config+"/authentications", h.ForwardConfigs.ListAuthentications)
	rt.Handle(fasthttp.MethodGet, config+"/authentications/{auth_id}", h.ForwardConfigs.GetAuthentication)
	rt.Handle(fasthttp.MethodDelete, config+"/authentications/{auth_id}", h.ForwardConfigs.DeleteAuthentication)

	const tokens = "/payment-methods/{payment_method_id}/network-tokens"
	rt.Handle(fasthttp.MethodGet, tokens, h.NetworkTokens.List)
	rt.Handle(fasthttp.MethodPost, tokens, h.NetworkTokens.Provision)
	rt.Handle(fasthttp.MethodGet, tokens+"/{network_token_id}", h.NetworkTokens.Get)
	rt.Handle(fasthttp.MethodDelete, tokens+"/{network_token_id}", h.NetworkTokens.Delete)
	rt.Handle(fasthttp.MethodPost, tokens+"/{network_token_id}/suspend", h.NetworkTokens.Suspend)
	rt.Handle(fasthttp.MethodPost, tokens+"/{network_token_id}/resume", h.NetworkTokens.Resume)

	rt.Handle(fasthttp.MethodPost, "/three-ds-scenarios", h.ThreeDSScenarios.Write)
	rt.Handle(fasthttp.MethodPut, "/three-ds-scenarios/{id}", h.ThreeDSScenarios.Write)

	rt.Handle(fasthttp.MethodPost, CheckoutSessionsPath, h.Checkout.Create)
	rt.Handle(fasthttp.MethodGet, CheckoutSessionsPath+"/{id}", h.Checkout.Get)
	rt.Handle(fasthttp.MethodPut, CheckoutSessionsPath+"/{id}/fields", h.Checkout.Fields)
	rt.Handle(fasthttp.MethodGet, "/checkout/settings", h.Checkout.GetSettings)
	rt.Handle(fasthttp.MethodPut, "/checkout/settings", h.Checkout.PutSettings)
	rt.Handle(fasthttp.MethodGet, SecureFieldsPath+"/{file:*}", h.SecureFields.Serve)

	// Paths only vault-proxy serves: another method there is 405, not
	// core-api's 404 for a route it does not have.
	rt.RefuseOtherMethods("/audit-events", "/audit-events/{id}", "/vault-forward", "/vault-forward/configs", config, config+"/authentications",
		config+"/authentications/{auth_id}", tokens, tokens+"/{network_token_id}", tokens+"/{network_token_id}/suspend",
		tokens+"/{network_token_id}/resume", CheckoutSessionsPath, CheckoutSessionsPath+"/{id}", CheckoutSessionsPath+"/{id}/fields",
		"/checkout/settings", SecureFieldsPath+"/{file:*}")

	// One base URL: everything else is core-api's (a path both serve,
	// such as /payment-methods, with the methods vault-proxy does not).
	rt.NotFound(h.Core.Pass)
	rt.MethodNotAllowed(h.Core.Pass)
}

// InternalRoutes registers every route of the internal listener on rt:
// those shared/zone declares, and readiness (zone.ReadyPath).
func InternalRoutes(rt *Router, h InternalHandlers) {
	rt.Health(h.Checks...)
	rt.Handle(fasthttp.MethodGet, zone.CardPath, h.Cards.Metadata)
	rt.Handle(fasthttp.MethodPut, zone.CardPath, h.Cards.UpdateExpiry)
	rt.Handle(fasthttp.MethodDelete, zone.CardPath, h.Cards.Delete)
	rt.Handle(fasthttp.MethodDelete, zone.SecurityCodeHoldPath, h.Cards.ForgetChallengeSecurityCode)
	rt.Handle(fasthttp.MethodPost, zone.DetokenizePath, h.Detokenize.Handle)
	rt.Handle(fasthttp.MethodGet, zone.MerchantAccountUsagePath, h.MerchantAccounts.Usage)
	rt.Handle(fasthttp.MethodPost, zone.MerchantAccountClosePath, h.MerchantAccounts.Close)
	rt.Handle(fasthttp.MethodPost, zone.MerchantAccountReopenPath, h.MerchantAccounts.Reopen)
	rt.Handle(fasthttp.MethodPost, zone.MerchantAccountCancelClosePath, h.MerchantAccounts.CancelClose)
	rt.Handle(fasthttp.MethodGet, zone.ReconcileRecordsPath, h.Reconciliation.List)
	rt.Handle(fasthttp.MethodDelete, zone.ReconcileRecordPath, h.Reconciliation.Shred)
}

// AdminRoutes registers the admin listener's routes: health and readiness.
func AdminRoutes(rt *Router, checks []Check, metrics http.Handler) {
	rt.Health(checks...)
	if metrics != nil {
		// Prometheus' text format, from the process's registry
		// (shared/metrics): labels carry route templates and statuses only.
		h := fasthttpadaptor.NewFastHTTPHandler(metrics)
		rt.Handle(fasthttp.MethodGet, "/metrics", func(ctx *fasthttp.RequestCtx) error {
			h(ctx)
			return nil
		})
	}
}
