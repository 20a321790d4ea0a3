package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
	"github.com/payorch/tokenizer/bank"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// Cards serves the routes where card data enters or leaves by token.
type Cards struct {
	Vaulting *vaulting.Service
	// NetworkTokens, when set, deletes a card's network tokens at their
	// token service before the card is deleted.
	NetworkTokens interface {
		DeleteAll(ctx context.Context, c vaulting.Caller, pm uuid.UUID) error
	}
	Auth *Authenticator
	Core *Core
	// KeyLocks runs one payment with a card given in full at a time per
	// idempotency key (CreateTransaction).
	KeyLocks KeyLocks
	// Checkout, when set, takes payments with a checkout session
	// (payWithCheckoutSession).
	Checkout CheckoutStore
	Log      *slog.Logger
}

// cardInput, giftCardInput and bankInput are the bodies POST
// /payment-methods takes for a card, a gift card and a bank account (the
// OpenAPI document's CardInput, GiftCardInput and BankAccountInput), as
// strictjson holds them: anything else, a card's pin or a gift card's
// security code included, is refused with a pointer to it rather than
// ignored, at any depth. Any field may be null, as if absent.
type (
	cardInput struct {
		paymentMethodInput
		Number         *string `json:"number"`
		ExpirationDate *string `json:"expiration_date"`
		SecurityCode   *string `json:"security_code"`
	}
	giftCardInput struct {
		paymentMethodInput
		Number         *string `json:"number"`
		ExpirationDate *string `json:"expiration_date"`
		Pin            *string `json:"pin"`
	}
	bankInput struct {
		paymentMethodInput
		bankAccountInput
		Mandate *zone.Mandate `json:"mandate"`
	}
	// bankAccountInput are a bank account's details, as POST
	// /payment-methods and a payment with the account given in full
	// take them.
	bankAccountInput struct {
		Scheme            *string `json:"scheme"`
		AccountNumber     *string `json:"account_number"`
		RoutingNumber     *string `json:"routing_number"`
		AccountType       *string `json:"account_type"`
		IBAN              *string `json:"iban"`
		BIC               *string `json:"bic"`
		SortCode          *string `json:"sort_code"`
		AccountHolderName *string `json:"account_holder_name"`
		Country           *string `json:"country"`
		Currency          *string `json:"currency"`
	}
	// paymentMethodInput are the fields every method takes, passed on to
	// core-api as they are.
	paymentMethodInput struct {
		Method                  *string `json:"method"`
		BuyerID                 *string `json:"buyer_id"`
		BuyerExternalIdentifier *string `json:"buyer_external_identifier"`
		ExternalIdentifier      *string `json:"external_identifier"`
	}
)

var (
	cardSchema     = strictjson.For[cardInput]()
	giftCardSchema = strictjson.For[giftCardInput]()
	bankSchema     = strictjson.For[bankInput]()
)

// CreatePaymentMethod vaults a card, gift card or bank account
// (createBank) and passes the request on to core-api with the number
// replaced by its token; other payment methods pass through unchanged. If
// core-api refuses, the record is shredded again so nothing is left
// half-done.
func (h *Cards) CreatePaymentMethod(ctx *fasthttp.RequestCtx) error {
	body := ctx.Request.Body()
	// The pooled request buffer held the card number: clear it once done.
	defer clear(body)
	method := gjson.GetBytes(body, "method")
	schema := cardSchema
	switch method.Str {
	case string(vaultproxy.KindCard):
	case string(vaultproxy.KindGiftCard):
		schema = giftCardSchema
	case "bank":
		return h.createBank(ctx, body)
	default:
		return h.Core.Pass(ctx)
	}
	c, err := h.Auth.Authorize(ctx, "payment-methods.write")
	if err != nil {
		return err
	}
	if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
		return err
	}
	doc, err := strictObjectInPlace(body, schema)
	if err != nil {
		return err
	}
	// The other fields go on to core-api: none may hold a card number.
	if err := refuseCardNumbers(parseView(body), "number", "security_code", "pin"); err != nil {
		return err
	}
	caller := vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(ctx)}
	rec, err := h.vaultCard(ctx, caller, vaultproxy.Kind(method.Str), doc, uuid.Nil)
	if err != nil {
		return vaultingError(err)
	}

	return h.passOn(ctx, caller, rec.Token, vaultedPaymentMethod(method.Str, rec.Token, doc))
}

// vaultCard validates and vaults the card or gift card of doc (a body, or
// a payment's payment_method, as strictObjectInPlace read it) under token
// (uuid.Nil: a new one). Both ways a card enters go through it.
func (h *Cards) vaultCard(ctx *fasthttp.RequestCtx, caller vaulting.Caller, kind vaultproxy.Kind, doc map[string]gjson.Result, token uuid.UUID) (*vaultproxy.VaultedCard, error) {
	req := vaulting.CardRequest{
		Kind:           kind,
		Number:         []byte(doc["number"].Str),
		ExpirationDate: doc["expiration_date"].Str,
		SecurityCode:   []byte(doc["security_code"].Str),
		Token:          token,
	}
	if req.Kind == vaultproxy.KindGiftCard {
		req.SecurityCode = []byte(doc["pin"].Str)
	}
	rctx, cancel := requestContext(ctx, time.Minute)
	defer cancel()
	return h.Vaulting.VaultCard(rctx, caller, req)
}

// vaultedPaymentMethod is the payment method a vaulted card, gift card or
// bank account becomes in core-api: the token as its id, the fields every
// method takes from doc (the body as strictObject read it).
func vaultedPaymentMethod(method string, token uuid.UUID, doc map[string]gjson.Result) zone.VaultedPaymentMethod {
	return zone.VaultedPaymentMethod{Method: method, ID: token.String(),
		BuyerID: docString(doc, "buyer_id"), BuyerExternalIdentifier: docString(doc, "buyer_external_identifier"),
		ExternalIdentifier: docString(doc, "external_identifier")}
}

// vaultedBankAccount is the payment method a vaulted bank account becomes:
// the details as the vault validated them (acct), the merchant's mandate.
func vaultedBankAccount(token uuid.UUID, doc map[string]gjson.Result, acct bank.Account) zone.VaultedPaymentMethod {
	pm := vaultedPaymentMethod("bank", token, doc)
	pm.Scheme, pm.Country, pm.Currency = &acct.Scheme, &acct.Country, &acct.Currency
	pm.AccountHolderName = &acct.AccountHolderName
	pm.AccountType, pm.RoutingNumber = nonEmpty(acct.AccountType), nonEmpty(acct.RoutingNumber)
	pm.SortCode, pm.BIC = nonEmpty(acct.SortCode), nonEmpty(acct.BIC)
	if m, ok := doc["mandate"]; ok {
		pm.Mandate = &zone.Mandate{Recurring: m.Get("recurring").Bool()}
	}
	return pm
}

// docString is doc's string k, nil when absent.
func docString(doc map[string]gjson.Result, k string) *string {
	if v, ok := doc[k]; ok {
		s := v.Str
		return &s
	}
	return nil
}

// nonEmpty is s, nil when empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// passOn sends the payment method, now holding a token instead of the
// sensitive number, to core-api, and shreds the vaulted record again when
// core-api does not store it.
func (h *Cards) passOn(ctx *fasthttp.RequestCtx, caller vaulting.Caller, token uuid.UUID, onward zone.VaultedPaymentMethod) error {
	a, err := h.createPaymentMethod(ctx, caller, token, onward, true)
	if err != nil {
		return err
	}
	a.write(ctx)
	return nil
}

// coreAnswer is core-api's answer to a call, passed back as it is.
type coreAnswer struct {
	status      int
	body        []byte
	contentType string
}

func (a coreAnswer) write(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(a.status)
	ctx.SetContentType(a.contentType)
	ctx.SetBody(a.body)
}

// createPaymentMethod has core-api create the payment method of token.
// owned says this request vaulted the record: a refusal core-api stands by
// shreds it. A record an earlier request vaulted (a payment sent again)
// is never shredded here, and its payment method may be stored already:
// it is created, or read back when it is.
func (h *Cards) createPaymentMethod(ctx *fasthttp.RequestCtx, caller vaulting.Caller, token uuid.UUID, onward zone.VaultedPaymentMethod, owned bool) (coreAnswer, error) {
	out, _ := json.Marshal(onward)
	if !owned {
		status, respBody, ct, err := h.resend(ctx, token, out)
		if err != nil {
			h.Log.Error("core-api did not complete a payment method's creation", "request_id", caller.RequestID, "token", token)
			return coreAnswer{}, apierror.BadGateway("core-api did not answer; nothing was charged")
		}
		return coreAnswer{status, respBody, ct}, nil
	}
	status, respBody, ct, err := h.Core.Call(ctx, fasthttp.MethodPost, zone.PaymentMethodsPath, out)
	if err != nil && notSent(err) {
		h.rollback(caller, token)
		return coreAnswer{}, apierror.BadGateway("core-api is unreachable; nothing was stored")
	}
	if err != nil || status >= 500 {
		// No answer, or a server error (core-api's 504 can come after its
		// commit): core-api may have stored the payment method, or not.
		// Only a refusal it stands by shreds the card.
		if status, respBody, ct, err = h.resend(ctx, token, out); err != nil {
			// Not known: the card is kept, and the answer says how to find
			// out. If no payment method holds it a grace period later,
			// core-api's vault reconciliation has it shredded.
			h.Log.Error("core-api did not complete a payment method's creation; its vaulted card is kept", "request_id", caller.RequestID, "token", token)
			return coreAnswer{}, apierror.BadGateway("core-api did not answer; payment method " + token.String() +
				" may have been stored: GET /payment-methods/" + token.String() + " tells")
		}
	}
	if status >= 300 {
		h.rollback(caller, token) // refused: nothing stored
	}
	return coreAnswer{status, respBody, ct}, nil
}

// createBank vaults a bank account number or IBAN and passes the rest on.
func (h *Cards) createBank(ctx *fasthttp.RequestCtx, body []byte) error {
	c, err := h.Auth.Authorize(ctx, "payment-methods.write")
	if err != nil {
		return err
	}
	if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
		return err
	}
	doc, err := strictObjectInPlace(body, bankSchema)
	if err != nil {
		return err
	}
	if err := refuseCardNumbers(parseView(body), bankSecrets...); err != nil {
		return err
	}
	caller := vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(ctx)}
	in := bankAccount(doc)
	defer clear(in.AccountNumber)
	defer clear(in.IBAN)
	rctx, cancel := requestContext(ctx, time.Minute)
	defer cancel()
	rec, acct, err := h.Vaulting.VaultBank(rctx, caller, in, uuid.Nil)
	if err != nil {
		return vaultingError(err)
	}
	return h.passOn(ctx, caller, rec.Token, vaultedBankAccount(rec.Token, doc, acct))
}

// bankSecrets are the fields of a bank account that the vault keeps.
var bankSecrets = []string{"account_number", "iban"}

// bankAccount is the bank account of doc (a body, or a payment's
// payment_method, as strictObjectInPlace read it), its number and IBAN
// scratch bytes the caller clears.
func bankAccount(doc map[string]gjson.Result) bank.Input {
	return bank.Input{
		Scheme: doc["scheme"].Str, AccountNumber: []byte(doc["account_number"].Str), RoutingNumber: doc["routing_number"].Str,
		AccountType: doc["account_type"].Str, IBAN: []byte(doc["iban"].Str), BIC: doc["bic"].Str, SortCode: doc["sort_code"].Str,
		AccountHolderName: doc["account_holder_name"].Str, Country: doc["country"].Str, Currency: doc["currency"].Str,
	}
}

// resend sends a payment method's creation again after its answer was
// lost or was a server error. Its id is the token, so core-api stores it at most once: a 2xx
// means stored now; a 409 duplicate_record naming it means stored by the
// first call, and it is read back (the caller's payment-methods.write
// scope allows the read) and answered as created. Any other refusal is
// checked the same way before it is believed, since it would shred the
// card. An error means it is not known whether it was stored.
func (h *Cards) resend(ctx *fasthttp.RequestCtx, token uuid.UUID, body []byte) (int, []byte, string, error) {
	status, respBody, ct, err := h.Core.Call(ctx, fasthttp.MethodPost, zone.PaymentMethodsPath, body)
	if err != nil || status < 300 {
		return status, respBody, ct, err
	}
	gs, gBody, gct, err := h.Core.Call(ctx, fasthttp.MethodGet, zone.PaymentMethodPathPrefix+token.String(), nil)
	switch {
	case err != nil:
		return 0, nil, "", err
	case gs == fasthttp.StatusOK:
		return fasthttp.StatusCreated, gBody, gct, nil // stored by the first call
	case gs == fasthttp.StatusNotFound:
		return status, respBody, ct, nil // not stored: the refusal stands
	}
	return 0, nil, "", fmt.Errorf("read back: status %d", gs)
}

// notSent reports whether a call failed before any byte of the request
// could reach core-api: no connection was made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, fasthttp.ErrNoFreeConns)
}

func (h *Cards) rollback(c vaulting.Caller, token uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Vaulting.Delete(ctx, c, token); err != nil {
		// Kept until core-api's vault reconciliation finds it unclaimed.
		h.Log.Error("rollback of a vaulted card failed", "request_id", c.RequestID, "token", token, "err", err)
	}
}

func actor(c Caller) string {
	return "token:" + c.Principal.TokenID
}

// vaultingError maps the vault's errors to the envelope: field errors become
// a 400 with one detail each, never echoing the input.
func vaultingError(err error) error {
	return vaultingErrorAt(err, "")
}

// vaultingErrorAt is vaultingError for a card at JSON pointer at of the
// body (a payment's "/payment_method").
func vaultingErrorAt(err error, at string) error {
	var fe vaulting.FieldErrors
	if errors.As(err, &fe) {
		details := make([]apierror.Detail, len(fe))
		for i, f := range fe {
			details[i] = apierror.Detail{Location: apierror.LocationBody, Pointer: at + "/" + f.Field, Message: f.Message, Type: "value_error.card." + f.Code}
		}
		return apierror.BadRequest("the payment method is not valid", details...)
	}
	if errors.Is(err, vaultproxy.ErrNotFound) {
		return apierror.NotFound("payment method not found")
	}
	if errors.Is(err, vaultproxy.ErrMerchantAccountClosed) {
		return apierror.NotFound("merchant account not found")
	}
	if errors.Is(err, vaultproxy.ErrTooRecent) {
		return errTooRecent
	}
	return err
}

// errTooRecent answers a reconciliation's shred of a record vaulted less
// than the minimum age ago.
var errTooRecent = apierror.Unprocessable("the vaulted record is younger than the reconciliation's minimum age; it is kept")

// --- internal listener (mTLS, core-api only) ---

func internalCaller(ctx *fasthttp.RequestCtx) (vaulting.Caller, error) {
	// core-api names the account on every call (vaultclient). The public
	// routes' default ("default") is not taken here: a call that lost the
	// header would act in an account its caller did not name.
	if len(ctx.Request.Header.Peek(accountid.Header)) == 0 {
		return vaulting.Caller{}, apierror.BadRequest("the merchant account header is required on the internal listener", apierror.Detail{
			Location: apierror.LocationHeader, Pointer: accountid.Header, Message: accountid.Header + " is required", Type: "value_error.missing",
		})
	}
	m, err := MerchantAccount(ctx)
	if err != nil {
		return vaulting.Caller{}, err
	}
	a := "core-api"
	if v := ctx.Request.Header.Peek(zone.ActorHeader); len(v) > 0 && len(v) <= 128 {
		a += ":" + string(v)
	}
	return vaulting.Caller{MerchantAccountID: m, Actor: a, RequestID: RequestID(ctx)}, nil
}

// internalTarget starts an internal /internal/cards/{token} request: the
// context its work runs under (cancel is never nil), the caller, the token.
func internalTarget(ctx *fasthttp.RequestCtx) (context.Context, vaulting.Caller, uuid.UUID, context.CancelFunc, error) {
	rctx, cancel := requestContext(ctx, 30*time.Second)
	c, err := internalCaller(ctx)
	if err != nil {
		return rctx, c, uuid.Nil, cancel, err
	}
	t, err := tokenParam(ctx)
	return rctx, c, t, cancel, err
}

func tokenParam(ctx *fasthttp.RequestCtx) (uuid.UUID, error) {
	s, _ := ctx.UserValue("token").(string)
	t, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, apierror.NotFound("payment method not found")
	}
	return t, nil
}

// Metadata answers GET /internal/cards/{token}: display data only.
func (h *Cards) Metadata(ctx *fasthttp.RequestCtx) error {
	rctx, c, t, cancel, err := internalTarget(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	vc, err := h.Vaulting.Metadata(rctx, c, t)
	if err != nil {
		return vaultingError(err)
	}
	return WriteJSON(ctx, fasthttp.StatusOK, zone.CardMetadata{
		Type: "card-metadata", ID: vc.Token.String(), MerchantAccountID: vc.MerchantAccountID, Kind: string(vc.Kind),
		Scheme: vc.Scheme, Label: vc.Last4, BIN: vc.BIN, CardType: vc.CardType, ExpirationDate: vc.ExpirationDate,
		Fingerprint: vc.Fingerprint, CreatedAt: vc.CreatedAt.UTC().Format(time.RFC3339),
		SecurityCodeHeld: securityCodeHeld(h.Vaulting, vc.Token, string(ctx.QueryArgs().Peek(zone.SecurityCodeForParam))),
	})
}

// securityCodeHeld is whether the card of token has its security code
// held: for its payment's authorization, or, when the question names a
// transaction (zone.SecurityCodeForParam), for the authorization that
// resumes that transaction after its 3-D Secure challenge.
func securityCodeHeld(v *vaulting.Service, token uuid.UUID, transactionID string) bool {
	if transactionID != "" {
		return v.SecurityCodeHeldFor(token, transactionID)
	}
	return v.SecurityCodeHeld(token)
}

// ForgetChallengeSecurityCode answers DELETE zone.SecurityCodeHoldPath:
// core-api saw the transaction's 3-D Secure challenge end without an
// authorization, so the code held for it is wiped now rather than at the
// hold's expiry. 204 whether or not a code was held, so core-api may ask
// again; no database is read (the hold's key is of the token and the
// transaction, which only core-api knows together).
func (h *Cards) ForgetChallengeSecurityCode(ctx *fasthttp.RequestCtx) error {
	if _, err := internalCaller(ctx); err != nil {
		return err
	}
	t, err := tokenParam(ctx)
	if err != nil {
		return err
	}
	id, _ := ctx.UserValue("transaction_id").(string)
	if len(id) > maxTransactionIDLen {
		return apierror.BadRequest("transaction_id must be a transaction id",
			apierror.Detail{Location: apierror.LocationPath, Pointer: "transaction_id", Message: "at most 100 characters", Type: "value_error.any_str.max_length"})
	}
	h.Vaulting.ForgetSecurityCodeFor(t, id)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// UpdateExpiry answers PUT /internal/cards/{token}.
func (h *Cards) UpdateExpiry(ctx *fasthttp.RequestCtx) error {
	rctx, c, t, cancel, err := internalTarget(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	var in zone.ExpiryUpdate
	if err := decodeInternal(ctx, &in); err != nil {
		return err
	}
	if err := h.Vaulting.UpdateExpiry(rctx, c, t, in.ExpirationDate); err != nil {
		return vaultingError(err)
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// Delete answers DELETE /internal/cards/{token}: crypto-shredding, after
// the card's network tokens are deleted at their token service.
func (h *Cards) Delete(ctx *fasthttp.RequestCtx) error {
	rctx, c, t, cancel, err := internalTarget(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return noContent(ctx, h.shred(rctx, c, t, h.Vaulting.Delete, true))
}

// shred has del crypto-shred the card, its network tokens deleted at their
// token service first: before the first try when tokensFirst, else only
// once del has refused because the card has one. A use of the card that
// opened it before this request can provision a network token after
// DeleteAll: the vault then keeps the card (vaultproxy.ErrLiveNetworkToken),
// and that token is deleted like the others. Uses that keep provisioning
// get a bounded number of rounds; then the caller may retry.
func (h *Cards) shred(rctx context.Context, c vaulting.Caller, t uuid.UUID,
	del func(context.Context, vaulting.Caller, uuid.UUID) error, tokensFirst bool) error {
	const rounds = 3
	for round := 1; ; round++ {
		if h.NetworkTokens != nil && (tokensFirst || round > 1) {
			if err := h.NetworkTokens.DeleteAll(rctx, c, t); err != nil {
				return networkTokenError(err, "payment method")
			}
		}
		err := del(rctx, c, t)
		if err == nil {
			return nil
		}
		if !errors.Is(err, vaultproxy.ErrLiveNetworkToken) {
			return vaultingError(err)
		}
		if round == rounds || h.NetworkTokens == nil {
			return apierror.ConcurrentRequest("the payment method got a network token while it was being deleted; retry")
		}
	}
}
