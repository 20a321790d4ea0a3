package httpapi

import (
	"log/slog"

	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/merchants"
	"github.com/payorch/core-api/paymentmethods"
	"github.com/payorch/shared/pagination"
)

// Deps is what handlers need; app builds it. Handlers decode a request,
// call one service method and encode its answer.
type Deps struct {
	Log     *slog.Logger
	Auth    *Auth
	Cursors *pagination.Codec // list cursors; see package pagination

	MerchantAccounts *merchants.Service
	Buyers           *buyers.Service
	PaymentMethods   *paymentmethods.Service
}

// Routes registers every core-api route on rt. Each resource's handlers
// live in their own file and are registered here, one line each.
func Routes(rt *Router, d Deps) {
	merchantAccountRoutes(rt, d)
	buyerRoutes(rt, d)
	paymentMethodRoutes(rt, d) // also /buyers/payment-methods and /buyers/gift-cards
	openAPIRoutes(rt)          // GET /openapi.json
}
