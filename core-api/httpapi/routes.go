package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/core-api/merchants"
	"github.com/payorch/core-api/paymentmethods"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/threeds"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/zone"
)

// Deps is what handlers need; app builds it. Handlers decode a request,
// call one service method and encode its answer.
type Deps struct {
	Log     *slog.Logger
	Auth    *Auth
	Cursors *pagination.Codec // list cursors; see package pagination
	Checks  []Check           // readiness: what core-api depends on

	MerchantAccounts *merchants.Service
	Buyers           *buyers.Service
	PaymentMethods   *paymentmethods.Service
	PaymentServices  *paymentservices.Service
	Transactions     *transactions.Service
	Idempotency      *idempotency.Service // keys of the routes wrapped by Deps.Idempotent
	// ThreeDSScenarios is the sandbox 3-D Secure simulator's rule book;
	// nil where the simulator does not exist (production): its routes
	// are then not registered, and answer 404.
	ThreeDSScenarios *threeds.Service
	Webhooks         *webhooks.Service
	// Dashboard is the merchant dashboard's sign-in (dashboard.go).
	Dashboard DashboardDeps
	// Metrics serves the process's metrics (the admin listener's), on
	// GET /metrics too.
	Metrics http.Handler
}

// Routes registers every core-api route on rt: this is the one list of
// them. Each resource's handlers live in their own file.
func Routes(rt *Router, d Deps) {
	rt.Health(d.Checks...)
	rt.Handle("GET /openapi.json", serveOpenAPI)
	dashboardRoutes(rt, d.Dashboard)

	merchants := merchantHandlers{d}
	rt.Handle("POST /merchant-accounts", merchants.create)
	rt.Handle("GET /merchant-accounts", merchants.list)
	rt.Handle("GET /merchant-accounts/{merchant_account_id}", merchants.get)
	rt.Handle("PUT /merchant-accounts/{merchant_account_id}", merchants.update)
	rt.Handle("DELETE /merchant-accounts/{merchant_account_id}", merchants.delete)

	buyers := buyerHandlers{d}
	rt.Handle("POST /buyers", buyers.create)
	rt.Handle("GET /buyers", buyers.list)
	rt.Handle("GET /buyers/{buyer_id}", buyers.get)
	rt.Handle("PUT /buyers/{buyer_id}", buyers.update)
	rt.Handle("DELETE /buyers/{buyer_id}", buyers.delete)

	// vault-proxy creates the payment methods of what it vaults here
	// (zone.PaymentMethodsPath), and reads one back by its id.
	pms := &paymentMethods{d}
	rt.Handle("POST "+zone.PaymentMethodsPath, pms.create)
	rt.Handle("GET /payment-methods", pms.list)
	rt.Handle("GET "+zone.PaymentMethodPathPrefix+"{id}", pms.get)
	rt.Handle("PUT /payment-methods/{id}", pms.update)
	rt.Handle("DELETE /payment-methods/{id}", pms.delete)
	rt.Handle("GET /buyers/payment-methods", pms.buyerPaymentMethods)
	rt.Handle("GET /buyers/gift-cards", pms.giftCards)
	rt.Handle("GET /mandates/{mandate_id}", pms.mandate)
	rt.Handle("GET /mandates/{mandate_id}/events", pms.mandateEvents)

	pss := paymentServiceHandlers{d}
	rt.Handle("POST /payment-services", pss.create)
	rt.Handle("GET /payment-services", pss.list)
	rt.Handle("GET /payment-services/{payment_service_id}", pss.get)
	rt.Handle("PUT /payment-services/{payment_service_id}", pss.update)
	rt.Handle("DELETE /payment-services/{payment_service_id}", pss.delete)

	threeDSRoutes(rt, d)

	// The money-moving routes attach what they make to their
	// Idempotency-Key before calling the connector; a retry after a run
	// that did not complete resumes it (Deps.Resumable). An alias shares
	// its canonical route's idempotency endpoint.
	txs := transactionHandlers{d}
	resumeTx, resumeTxCreated := txs.resumeTransaction(http.StatusOK), txs.resumeTransaction(http.StatusCreated)
	rt.Handle("POST /transactions", d.Resumable(ScopeTransactionsWrite, "transactions.create", txs.create, resumeTxCreated))
	rt.Handle("GET /transactions", txs.list)
	rt.Handle("GET /transactions/{transaction_id}", txs.get)
	rt.Handle("GET /transactions/{transaction_id}/events", txs.events)
	rt.Handle("GET /transactions/{transaction_id}/events/{event_id}", txs.event)
	rt.Handle("POST /transactions/{transaction_id}/capture", d.Resumable(ScopeTransactionsWrite, "transactions.capture", txs.capture(), resumeTx))
	rt.Handle("POST /transactions/{transaction_id}/void", d.Resumable(ScopeTransactionsWrite, "transactions.void", txs.void(), resumeTx))
	rt.Handle("POST /transactions/{transaction_id}/refunds", d.Resumable(ScopeTransactionsWrite, "transactions.refund", txs.refund(), txs.resumeRefund))
	rt.Handle("GET /transactions/{transaction_id}/refunds", txs.refunds)
	rt.Handle("POST /transactions/{transaction_id}/sync", txs.sync)
	rt.Handle("POST /transactions/{transaction_id}/session", txs.session)
	rt.Handle("POST /transactions/{transaction_id}/anti-fraud-review", txs.antiFraudReview)
	rt.Handle("GET /transactions/{transaction_id}/complete", txs.complete)
	rt.Handle("POST /captures", d.Resumable(ScopeTransactionsWrite, "transactions.capture", txs.captureAlias(), resumeTx))
	rt.Handle("POST /voids", d.Resumable(ScopeTransactionsWrite, "transactions.void", txs.voidAlias(), resumeTx))
	rt.Handle("POST /refunds", d.Resumable(ScopeTransactionsWrite, "transactions.refund", txs.refundAlias(), txs.resumeRefund))
	rt.Handle("GET /refunds/{refund_id}", txs.getRefund)

	whs := webhookHandlers{d}
	rt.Handle("POST /webhook-subscriptions", whs.create)
	rt.Handle("GET /webhook-subscriptions", whs.list)
	rt.Handle("GET /webhook-subscriptions/{webhook_subscription_id}", whs.get)
	rt.Handle("PUT /webhook-subscriptions/{webhook_subscription_id}", whs.update)
	rt.Handle("DELETE /webhook-subscriptions/{webhook_subscription_id}", whs.delete)
	rt.Handle("POST /webhook-subscriptions/{webhook_subscription_id}/rotate-secret", whs.rotateSecret)
	rt.Handle("GET /webhook-subscriptions/{webhook_subscription_id}/deliveries", whs.subscriptionDeliveries)
	rt.Handle("POST /webhook-subscriptions/{webhook_subscription_id}/replay", whs.replayFailed)
	rt.Handle("GET /events/{event_id}", whs.event)
	rt.Handle("GET /events/{event_id}/deliveries", whs.eventDeliveries)
	rt.Handle("POST /events/{event_id}/replay", whs.replayEvent)

	// Processors' notifications: no bearer, each connector verifies its
	// own signature (webhooks.go).
	rt.Handle("POST /webhooks/{connector}/{merchant_account_id}", txs.notification)
	rt.Handle("GET /metrics", serveMetrics(d.Metrics))
}
