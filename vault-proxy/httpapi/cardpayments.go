package httpapi

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// KeyLocks excludes concurrent payments under one idempotency key, across
// instances (postgres.DB's session advisory locks).
type KeyLocks interface {
	// TryLockKey takes the lock named name, ok false when someone holds
	// it; unlock must be called once done.
	TryLockKey(ctx context.Context, name string) (unlock func(), ok bool, err error)
}

// rawCardInput is the payment_method of a payment with a card given in
// full (POST /transactions with method "card", the OpenAPI document's
// RawCardPaymentMethod): the card fields POST /payment-methods takes and
// the payment method's own external identifier. rawBankInput is a bank
// account given in full (method "bank", RawBankPaymentMethod): the
// account's details as POST /payment-methods takes them, without a
// mandate (a debit sets one up: docs/transactions.md, "Bank debits").
// The buyer is the transaction's. Anything else is refused with a pointer
// to it.
type (
	rawCardInput struct {
		Method             *string `json:"method"`
		Number             *string `json:"number"`
		ExpirationDate     *string `json:"expiration_date"`
		SecurityCode       *string `json:"security_code"`
		ExternalIdentifier *string `json:"external_identifier"`
	}
	rawBankInput struct {
		Method *string `json:"method"`
		bankAccountInput
		ExternalIdentifier *string `json:"external_identifier"`
	}
)

// inFull is a kind of payment method a payment may carry given in full:
// the schema of its payment_method, its fields the vault keeps (the check
// of the rest for card numbers skips them), and how it is vaulted.
type inFull struct {
	schema  *strictjson.Schema
	secrets []string
	// vault validates the payment method of doc and, when this request
	// owns the vaulting, vaults it under token (uuid.Nil: a new one);
	// when an earlier request vaulted it under token, it holds what this
	// payment brings for it. It answers the payment method core-api is
	// to create and its token.
	vault func(h *Cards, ctx *fasthttp.RequestCtx, caller vaulting.Caller, doc map[string]gjson.Result, token uuid.UUID, owned bool) (zone.VaultedPaymentMethod, uuid.UUID, error)
}

var givenInFull = map[string]inFull{
	string(vaultproxy.KindCard): {strictjson.For[rawCardInput](), []string{"number", "security_code"}, (*Cards).cardInFull},
	"bank":                      {strictjson.For[rawBankInput](), bankSecrets, (*Cards).bankInFull},
}

// Scopes a payment with a payment method given in full needs: it creates
// a payment method as well as the transaction.
const (
	scopeTransactionsWrite   = "transactions.write"
	scopePaymentMethodsWrite = "payment-methods.write"
)

const paymentMethodPointer = "/payment_method"

// CreateTransaction serves POST /transactions. A payment whose
// payment_method is a card or a bank account given in full (method
// "card" or "bank", givenInFull) is taken here: the card or account is
// vaulted as POST /payment-methods vaults one (vaultCard, VaultBank), its
// payment method created in core-api, not stored (createPaymentMethod),
// and the payment goes on to core-api's POST /transactions with the rest
// of the body byte for byte and payment_method {"method":"id","id":token}
// (payOn). Every other payment passes through (Core.Pass refuses card data
// in it).
//
// Under an Idempotency-Key the token is derived from the merchant
// account, the key and the payment method's bytes
// (vaulting.IdempotentToken), and one such payment at a time runs per key
// (KeyLocks; another is 409 concurrent_request): a retry finds the card
// or account the first vaulted, goes on as the same bytes, and core-api
// answers the first payment's transaction rather than charging again. A
// retry with a changed payment method goes on with another token, and
// core-api refuses the key's reuse.
func (h *Cards) CreateTransaction(ctx *fasthttp.RequestCtx) error {
	body := ctx.Request.Body()
	if h.Checkout != nil && gjson.GetBytes(body, "payment_method.method").Str == checkoutSessionMethod {
		return h.payWithCheckoutSession(ctx)
	}
	kind, ok := givenInFull[gjson.GetBytes(body, "payment_method.method").Str]
	if !ok {
		if err := refuseCardFields(body); err != nil {
			clear(body)
			return err
		}
		return h.Core.Pass(ctx)
	}
	// The pooled request buffer held the card or account number: clear it
	// once done.
	defer clear(body)
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
	doc, err := strictObjectInPlace(pm, kind.schema)
	if err != nil {
		return at(err, paymentMethodPointer)
	}
	// The rest goes on to core-api: it holds no card or bank data.
	if err := refuseSensitive(ctx.Path(), body, "payment_method"); err != nil {
		return err
	}
	if err := refuseCardNumbers(parseView(pm), kind.secrets...); err != nil {
		return at(err, paymentMethodPointer)
	}

	caller := vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(ctx)}
	token, owned := uuid.Nil, true
	if key := string(ctx.Request.Header.Peek("Idempotency-Key")); key != "" {
		token = h.Vaulting.IdempotentToken(c.MerchantAccountID, key, pm)
		unlock, err := h.lockKey(ctx, c.MerchantAccountID, key)
		if err != nil {
			return err
		}
		defer unlock()
		rctx, cancel := requestContext(ctx, 10*time.Second)
		vaulted, err := h.Vaulting.Vaulted(rctx, caller, token)
		cancel()
		if err != nil {
			return err
		}
		owned = !vaulted
	}
	code := doc["security_code"].Str != ""
	onward, token, err := kind.vault(h, ctx, caller, doc, token, owned)
	if err != nil {
		return vaultingErrorAt(err, paymentMethodPointer)
	}
	// A card's code is for this payment's authorization only: whatever
	// became of it (not sent: a replayed answer, a refusal), it goes with
	// it.
	defer h.Vaulting.ForgetSecurityCode(token)

	stored := false
	onward.Stored, onward.ExternalIdentifier = &stored, docString(doc, "external_identifier")
	onward.BuyerID, onward.BuyerExternalIdentifier = topString(body, "buyer_id"), topString(body, "buyer_external_identifier")
	a, err := h.createPaymentMethod(ctx, caller, token, onward, owned)
	if err != nil {
		return err
	}
	if a.status >= 300 {
		a.write(ctx)
		return nil
	}
	a, err = h.payOn(ctx, caller, token, withPaymentMethod(body, start, len(pm), token), owned, code)
	if err != nil {
		return err
	}
	a.write(ctx)
	return nil
}

// cardInFull is inFull.vault for a card: vaulted as POST /payment-methods
// vaults one, or, vaulted by an earlier request, its security code held
// for this payment.
func (h *Cards) cardInFull(ctx *fasthttp.RequestCtx, caller vaulting.Caller, doc map[string]gjson.Result, token uuid.UUID, owned bool) (zone.VaultedPaymentMethod, uuid.UUID, error) {
	if owned {
		rec, err := h.vaultCard(ctx, caller, vaultproxy.KindCard, doc, token)
		if err != nil {
			return zone.VaultedPaymentMethod{}, token, err
		}
		token = rec.Token
	} else {
		h.Vaulting.HoldSecurityCode(token, []byte(doc["security_code"].Str))
	}
	return zone.VaultedPaymentMethod{Method: string(vaultproxy.KindCard), ID: token.String()}, token, nil
}

// bankInFull is inFull.vault for a bank account: vaulted as POST
// /payment-methods vaults one, or, vaulted by an earlier request, only
// validated again for the details core-api is told.
func (h *Cards) bankInFull(ctx *fasthttp.RequestCtx, caller vaulting.Caller, doc map[string]gjson.Result, token uuid.UUID, owned bool) (zone.VaultedPaymentMethod, uuid.UUID, error) {
	in := bankAccount(doc)
	defer clear(in.AccountNumber)
	defer clear(in.IBAN)
	if !owned {
		acct, err := vaulting.CheckBank(in)
		if err != nil {
			return zone.VaultedPaymentMethod{}, token, err
		}
		defer acct.Zero()
		return vaultedBankAccount(token, doc, acct), token, nil
	}
	rctx, cancel := requestContext(ctx, time.Minute)
	defer cancel()
	rec, acct, err := h.Vaulting.VaultBank(rctx, caller, in, token)
	if err != nil {
		return zone.VaultedPaymentMethod{}, token, err
	}
	return vaultedBankAccount(rec.Token, doc, acct), rec.Token, nil
}

// refuseCardFields is a 400 naming each card field (zone.SensitiveFields)
// of a payment_method that is not a card given in full: a stored card's
// security code, a gift card's number or PIN. Core.Pass looks at the top
// level only, and a security code is no card number it would find deeper.
func refuseCardFields(body []byte) error {
	pm := parseView(body).Get("payment_method")
	if !pm.IsObject() {
		return nil
	}
	var details []apierror.Detail
	pm.ForEach(func(k, _ gjson.Result) bool {
		for _, f := range zone.SensitiveFields {
			if strings.EqualFold(k.Str, f) {
				details = append(details, strictjson.BodyDetail(paymentMethodPointer+"/"+apierror.PointerToken(k.Str),
					`card data are accepted only with a card or bank account given in full (method "card" or "bank") or by POST /payment-methods`, "value_error.card_data"))
			}
		}
		return true
	})
	if len(details) > 0 {
		return apierror.BadRequest("card data cannot be sent with this payment method", details...)
	}
	return nil
}

// rawPaymentMethod is the bytes of body's payment_method, an object, which must be
// there once: core-api would read the last of two, which no check here
// would have looked at. The bytes are a view into body, from start.
func rawPaymentMethod(body []byte) (pm []byte, start int, err error) {
	if !gjson.ValidBytes(body) {
		return nil, 0, strictjson.Malformed("request body is not valid JSON")
	}
	root := parseView(body)
	var v gjson.Result
	n := 0
	root.ForEach(func(k, x gjson.Result) bool {
		if k.Str == "payment_method" {
			v, n = x, n+1
		}
		return true
	})
	if n != 1 || !v.IsObject() || v.Index <= 0 {
		return nil, 0, apierror.BadRequest("invalid request body", strictjson.BodyDetail(paymentMethodPointer,
			"payment_method must be given once, as an object", "value_error.payment_method"))
	}
	return body[v.Index : v.Index+len(v.Raw)], v.Index, nil
}

// at moves the body pointers of err's details under prefix: a check of a
// part of the body speaks of the whole.
func at(err error, prefix string) error {
	e := apierror.As(err)
	if e == nil {
		return err
	}
	for i := range e.Details {
		if e.Details[i].Location == apierror.LocationBody {
			e.Details[i].Pointer = prefix + e.Details[i].Pointer
		}
	}
	return e
}

// topString is body's top-level string member k, nil when absent or not a
// string (core-api refuses the payment then, with its pointer).
func topString(body []byte, k string) *string {
	v := parseView(body).Get(k)
	if v.Type != gjson.String {
		return nil
	}
	s := string([]byte(v.Str)) // a copy: body is cleared
	return &s
}

// withPaymentMethod is body with its payment_method (start and length
// of its bytes) replaced by the stored card's token; every other byte as
// sent.
func withPaymentMethod(body []byte, start, length int, token uuid.UUID) []byte {
	out := make([]byte, 0, len(body)-length+64)
	out = append(out, body[:start]...)
	out = append(out, `{"method":"id","id":"`...)
	out = append(out, token.String()...)
	out = append(out, `"}`...)
	return append(out, body[start+length:]...)
}

// lockKey takes the lock of the merchant account's payments with a card
// given in full under key: 409 concurrent_request while another holds it.
func (h *Cards) lockKey(ctx *fasthttp.RequestCtx, merchant, key string) (func(), error) {
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	unlock, ok, err := h.KeyLocks.TryLockKey(rctx, "card-payment|"+merchant+"|"+key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierror.ConcurrentRequest("a request with this Idempotency-Key is still running; retry once it is done")
	}
	return unlock, nil
}

// payOn sends the payment, its card now the payment method of token, to
// core-api, telling it when a security code is held for the card (code).
// What becomes of the card when core-api does not take the payment
// depends on whether this request vaulted it (owned): a record an earlier
// request vaulted may back that request's transaction and is kept. An
// owned one is withdrawn (its payment method deleted, the card shredded)
// when core-api refuses (4xx: no transaction was created) or could not be
// reached; kept when the answer is lost or a server error (a transaction
// may exist: core-api's 502 for a connector that could not be called is
// a failed one).
func (h *Cards) payOn(ctx *fasthttp.RequestCtx, caller vaulting.Caller, token uuid.UUID, payment []byte, owned, code bool) (coreAnswer, error) {
	var header []string
	if code {
		header = []string{zone.SecurityCodeHeldHeader, token.String()}
	}
	status, respBody, ct, err := h.Core.Call(ctx, fasthttp.MethodPost, zone.TransactionsPath, payment, header...)
	switch {
	case err != nil && notSent(err):
		if owned {
			h.withdraw(ctx, caller, token)
		}
		return coreAnswer{}, apierror.BadGateway("core-api is unreachable; nothing was charged")
	case err != nil:
		h.Log.Error("core-api did not answer a payment with a card given in full; its payment method is kept", "request_id", caller.RequestID, "token", token)
		return coreAnswer{}, apierror.BadGateway("core-api did not answer; the payment may have been made with payment method " +
			token.String() + ": GET /transactions?payment_method_id=" + token.String() + " tells")
	case status >= 400 && status < 500 && owned:
		h.withdraw(ctx, caller, token)
	case code:
		h.holdForChallenge(token, respBody)
	}
	return coreAnswer{status, respBody, ct}, nil
}

// holdForChallenge keeps the security code held for token's payment, not
// used yet, for the authorization that follows the payment's 3-D Secure
// challenge when core-api's answer (the transaction) waits on one: until
// the challenge's expiry (approval_expires_at), at most the holder's 15
// minutes, in this instance's memory only (docs/three-d-secure.md,
// "Challenges"). Any other answer leaves the hold to end with the
// request.
func (h *Cards) holdForChallenge(token uuid.UUID, answer []byte) {
	t := parseView(answer)
	if t.Get("status").Str != "buyer_approval_pending" || t.Get("three_d_secure.method").Str != "challenge" {
		return
	}
	id := t.Get("id").Str
	until, err := time.Parse(time.RFC3339Nano, t.Get("approval_expires_at").Str)
	if id == "" || err != nil {
		return
	}
	h.Vaulting.HoldSecurityCodeForChallenge(token, id, until)
}

// withdraw undoes a card's vaulting and its payment method's creation:
// core-api deletes the payment method, shredding the card as it does. If
// core-api cannot, the card is shredded here all the same; its payment
// method, not stored, is then left without a card.
func (h *Cards) withdraw(ctx *fasthttp.RequestCtx, caller vaulting.Caller, token uuid.UUID) {
	status, _, _, err := h.Core.Call(ctx, fasthttp.MethodDelete, zone.PaymentMethodPathPrefix+token.String(), nil)
	if err == nil && (status == fasthttp.StatusNoContent || status == fasthttp.StatusNotFound) {
		return
	}
	h.Log.Error("core-api did not delete the payment method of a refused payment; its card is shredded", "request_id", caller.RequestID, "token", token, "status", status)
	h.rollback(caller, token)
}
