package httpapi

import (
	"net/http"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
)

// The SPEC aliases of capture, void and refund (routes.go registers
// them):
//
//	POST /captures  write, Idempotency-Key  {transaction_id, amount?} -> 200 transaction
//	POST /voids     write, Idempotency-Key  {transaction_id} -> 200 transaction
//	POST /refunds   write, Idempotency-Key  {transaction_id, amount?, reason?, external_identifier?} -> 201 refund
//
// Each is its canonical route (POST /transactions/{transaction_id}/capture,
// .../void, .../refunds) with the transaction named in the body: the same
// service call, answers and refusals, under the same idempotency endpoint
// (a key is one operation's, whichever route it came by; the same key on
// the other route is another request, 422 idempotency_key_reused).

// transactionRefJSON is the transaction an alias's body names.
type transactionRefJSON struct {
	TransactionID *string `json:"transaction_id"`
}

func (t transactionRefJSON) transactionID() *string { return t.TransactionID }

// The alias bodies: the canonical body and transaction_id.
type (
	captureAliasJSON struct {
		transactionRefJSON
		captureJSON
	}
	voidAliasJSON struct {
		transactionRefJSON
		voidJSON
	}
	refundAliasJSON struct {
		transactionRefJSON
		refundJSON
	}
)

// aliasBody is an alias's body that carries canonical body In.
type aliasBody[In any] interface {
	transactionID() *string
	canonical() In
}

func (b captureAliasJSON) canonical() captureJSON { return b.captureJSON }
func (b voidAliasJSON) canonical() voidJSON       { return b.voidJSON }
func (b refundAliasJSON) canonical() refundJSON   { return b.refundJSON }

// inBody reads an alias's body (required: it names the transaction) into
// A and gives its canonical part to the canonical route's call.
func inBody[A aliasBody[In], In, Out any](call func(r *http.Request, merchant, id string, in In) (Out, error)) (
	func(r *http.Request, a *A) (string, error), func(r *http.Request, merchant, id string, a A) (Out, error)) {
	return aliasTarget[A, In], func(r *http.Request, merchant, id string, a A) (Out, error) {
		return call(r, merchant, id, a.canonical())
	}
}

// aliasTarget decodes an alias's body and returns the transaction it
// names: missing (no body at all included) or not a lower-case UUID is
// 400 at /transaction_id.
func aliasTarget[A aliasBody[In], In any](r *http.Request, a *A) (string, error) {
	if err := decodeOptional(r, a); err != nil {
		return "", err
	}
	switch id := (*a).transactionID(); {
	case id == nil:
		return "", apierror.BadRequest("invalid request body", strictjson.BodyDetail("/transaction_id", "is required", strictjson.TypeMissing))
	case !coreapi.IsUUID(*id):
		return "", apierror.BadRequest("invalid request body",
			strictjson.BodyDetail("/transaction_id", "must be a transaction id (a lower-case UUID)", "value_error.uuid"))
	default:
		return *id, nil
	}
}

func (h transactionHandlers) captureAlias() CallerHandler {
	target, call := inBody[captureAliasJSON](h.captureCall)
	return operation(http.StatusOK, target, call, transactionView)
}

func (h transactionHandlers) voidAlias() CallerHandler {
	target, call := inBody[voidAliasJSON](h.voidCall)
	return operation(http.StatusOK, target, call, transactionView)
}

func (h transactionHandlers) refundAlias() CallerHandler {
	target, call := inBody[refundAliasJSON](h.refundCall)
	return operation(http.StatusCreated, target, call, refundView)
}
