package httpapi

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// CheckoutSessionsPath is the checkout sessions' collection; a session's
// id after it is masked in the access log.
const CheckoutSessionsPath = "/checkout/sessions"

// checkoutSessionMethod is the payment_method of a payment with the card
// the secure fields sent with a checkout session.
const checkoutSessionMethod = "checkout-session"

type checkoutSessionPaymentInput struct {
	Method *string `json:"method"`
	ID     *string `json:"id"`
}

var checkoutSessionPaymentSchema = strictjson.For[checkoutSessionPaymentInput]()

// payWithCheckoutSession serves a POST /transactions whose payment_method
// is {"method": "checkout-session", "id"}: the session is claimed for
// this payment (one payment per session; a retry under the same
// Idempotency-Key is that payment again), its card becomes a payment
// method in core-api as a card given in full does (not stored unless the
// payment says store), and the payment goes on with payment_method
// {"method":"id","id":token} and, when the fields' security code is still
// held, the zone.SecurityCodeHeldHeader. A payment core-api refuses (4xx:
// no transaction) gives the session back, so a corrected one can use it.
func (h *Cards) payWithCheckoutSession(ctx *fasthttp.RequestCtx) error {
	body := ctx.Request.Body()
	c, err := h.Auth.Authorize(ctx, scopeTransactionsWrite)
	if err != nil {
		return err
	}
	if err := c.Principal.Require(scopePaymentMethodsWrite); err != nil {
		return err
	}
	if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
		return err
	}
	pm, start, err := rawPaymentMethod(body)
	if err != nil {
		return err
	}
	doc, err := strictObject(pm, checkoutSessionPaymentSchema)
	if err != nil {
		return at(err, paymentMethodPointer)
	}
	if err := refuseSensitive(ctx.Path(), body, "payment_method"); err != nil {
		return err
	}
	id, err := uuid.Parse(doc["id"].Str)
	if err != nil {
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail(paymentMethodPointer+"/id", "must be a checkout session id", "value_error.uuid"))
	}
	caller := vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(ctx)}
	key := string(ctx.Request.Header.Peek("Idempotency-Key"))
	if key != "" {
		unlock, err := h.lockKey(ctx, c.MerchantAccountID, key)
		if err != nil {
			return err
		}
		defer unlock()
	}
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	s, err := h.Checkout.CheckoutSession(rctx, id)
	if err == nil && s.MerchantAccountID != c.MerchantAccountID {
		err = vaultproxy.ErrNotFound
	}
	if err != nil {
		return checkoutError(err)
	}
	if err := matchesSession(body, s); err != nil {
		return err
	}
	s, replay, err := h.Checkout.ClaimCheckoutSession(rctx, c.MerchantAccountID, id, key, time.Now())
	if err != nil {
		return checkoutError(err)
	}
	token := s.PaymentMethodID
	release := func() {
		if replay {
			return
		}
		if err := h.Checkout.ReleaseCheckoutSession(context.WithoutCancel(rctx), id, key); err != nil {
			h.Log.Error("a checkout session stays used by a refused payment", "request_id", caller.RequestID,
				"checkout_session", logging.MaskID(id.String()), "err", err)
		}
	}
	if s.PaymentMethodKind == vaultproxy.CheckoutCardVaulted {
		stored := false
		onward := zone.VaultedPaymentMethod{Method: string(vaultproxy.KindCard), ID: token.String(), Stored: &stored,
			BuyerID: topString(body, "buyer_id"), BuyerExternalIdentifier: topString(body, "buyer_external_identifier")}
		// Not owned: the session holds the card until it expires, and a
		// refusal here leaves it for a corrected payment.
		a, err := h.createPaymentMethod(ctx, caller, token, onward, false)
		if err != nil {
			return err
		}
		if a.status >= 300 {
			release()
			a.write(ctx)
			return nil
		}
	}
	a, err := h.payOn(ctx, caller, token, withPaymentMethod(body, start, len(pm), token), false, h.Vaulting.SecurityCodeHeld(token))
	if err != nil {
		return err
	}
	if a.status >= 400 && a.status < 500 {
		release() // no transaction: the session and its security code stay for a corrected payment
	} else {
		h.Vaulting.ForgetSecurityCode(token)
	}
	a.write(ctx)
	return nil
}

// matchesSession refuses a payment whose amount or currency differ from
// those the session was created with, when it was created with them.
func matchesSession(body []byte, s *vaultproxy.CheckoutSession) error {
	root := parseView(body)
	var details []apierror.Detail
	if s.Amount != nil {
		if v := root.Get("amount"); v.Type != gjson.Number || v.Raw != strconv.FormatInt(*s.Amount, 10) {
			details = append(details, strictjson.BodyDetail("/amount", "must be the checkout session's amount, "+strconv.FormatInt(*s.Amount, 10), "value_error.checkout_session.amount"))
		}
	}
	if s.Currency != nil {
		if v := root.Get("currency"); v.Type != gjson.String || v.Str != *s.Currency {
			details = append(details, strictjson.BodyDetail("/currency", "must be the checkout session's currency, "+*s.Currency, "value_error.checkout_session.currency"))
		}
	}
	if len(details) > 0 {
		return apierror.Unprocessable("the payment does not match its checkout session", details...)
	}
	return nil
}
