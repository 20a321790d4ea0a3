package httpapi

import (
	"errors"
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
)

// Redirect payments ({"method":"gcash"}, docs/transactions.md, "Redirect
// payments"), created by POST /transactions with redirect_url and
// optionally approval_expires_at:
//
//	-> 201 buyer_approval_pending with payment_method.approval_url and approval_expires_at
//	-> 400 missing_redirect_url without redirect_url
//	-> 422 approval_expires_at_in_past / approval_expires_at_beyond_window, pointing at the value refused
//	   (/approval_expires_at, or /connection_options/{connector}/approval_expires_at, whose override wins)

// approvalExpiresAt reads approval_expires_at, an RFC 3339 date-time.
func approvalExpiresAt(s *string) (*time.Time, []apierror.Detail) {
	if s == nil {
		return nil, nil
	}
	at, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, []apierror.Detail{strictjson.BodyDetail("/approval_expires_at", "must be an RFC 3339 date-time with an offset", "value_error.datetime")}
	}
	return &at, nil
}

// redirectError maps the refusals of a redirect payment; nil for any
// other error.
func redirectError(err error) error {
	var ae *coreapi.ApprovalExpiryError
	switch {
	case errors.Is(err, coreapi.ErrMissingRedirectURL):
		return apierror.New(http.StatusBadRequest, "missing_redirect_url", err.Error(),
			strictjson.BodyDetail("/redirect_url", "is required for a redirect payment", strictjson.TypeMissing))
	case errors.As(err, &ae):
		return apierror.New(http.StatusUnprocessableEntity, ae.Code, ae.Error(),
			strictjson.BodyDetail(ae.Pointer, ae.Error(), "value_error."+ae.Code))
	}
	return nil
}
