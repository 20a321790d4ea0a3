package httpapi

import (
	"errors"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
)

// CodeResourceInUse (409): a record others still refer to cannot be
// deleted (a merchant account with buyers).
const CodeResourceInUse = "resource_in_use"

// domainError turns the domain's errors into the envelope; resource names
// the record for a 404 ("buyer"). Anything else passes through (and
// becomes a server_error).
func domainError(err error, resource string) error {
	var ve *coreapi.ValidationError
	var de *coreapi.DuplicateError
	var vpe *coreapi.VaultProxyError
	var ce *coreapi.ConnectorError
	var pse *coreapi.PaymentServiceError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &vpe):
		// vault-proxy without the route cannot answer for the request, so
		// the step fails closed, saying what could not be done.
		if vpe.Unanswered != "" && errors.Is(vpe.Err, coreapi.ErrVaultProxyNotFound) {
			return &upstreamError{apierror.BadGateway("vault-proxy " + vpe.Unanswered), vpe.Err}
		}
		return vaultProxyError(vpe.Err)
	case errors.As(err, &ce):
		return &upstreamError{apierror.BadGateway(ce.Failed), ce.Err}
	case errors.As(err, &ve):
		details := make([]apierror.Detail, len(ve.Problems))
		for i, p := range ve.Problems {
			details[i] = apierror.Detail{Location: apierror.LocationBody, Pointer: p.Pointer, Message: p.Message, Type: p.Type}
		}
		return apierror.BadRequest("invalid request body", details...)
	case errors.As(err, &de):
		return apierror.DuplicateRecord(de.Error(), de.ExistingID)
	case errors.As(err, &pse):
		return apierror.New(http.StatusUnprocessableEntity, pse.Code, pse.Message)
	case errors.Is(err, coreapi.ErrMerchantAccountNotFound):
		return apierror.NotFound("merchant account not found")
	case errors.Is(err, coreapi.ErrNotFound):
		return apierror.NotFound(resource + " not found")
	case errors.Is(err, coreapi.ErrInUse):
		return apierror.New(409, CodeResourceInUse, resource+" is still in use")
	case errors.Is(err, coreapi.ErrConflict):
		return apierror.ConcurrentRequest(resource + " was changed by another request meanwhile; retry")
	}
	return err
}

// pathUUID returns path parameter name if it is a UUID as the API writes
// them (lower case, coreapi.IsUUID), else a 400 with a detail on it. Upper
// case is refused, not folded, as in bodies and queries and the OpenAPI
// patterns (docs/api-conventions.md): an id has one spelling, the one the
// API returns, so the same id is never two different strings.
func pathUUID(r interface{ PathValue(string) string }, name string) (string, error) {
	v := r.PathValue(name)
	if !coreapi.IsUUID(v) {
		return "", apierror.BadRequest("invalid "+name, apierror.Detail{
			Location: apierror.LocationPath, Pointer: name, Message: "must be a UUID in lower case", Type: "type_error.uuid",
		})
	}
	return v, nil
}

// timestampLayout is RFC 3339 with microseconds (PostgreSQL's precision),
// always written in UTC ("Z").
const timestampLayout = "2006-01-02T15:04:05.000000Z07:00"

func timestamp(t time.Time) string {
	var a [len(timestampLayout)]byte
	return string(appendTimestamp(a[:0], t))
}

// pageOf is env with each item in its wire form.
func pageOf[T, J any](env pagination.Envelope[T], view func(*T) J) pagination.Envelope[J] {
	out := pagination.Envelope[J]{Items: make([]J, len(env.Items)), Limit: env.Limit,
		NextCursor: env.NextCursor, PreviousCursor: env.PreviousCursor}
	for i := range env.Items {
		out.Items[i] = view(&env.Items[i])
	}
	return out
}
