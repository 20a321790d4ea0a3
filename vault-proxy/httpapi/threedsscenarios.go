package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// ThreeDSScenarios takes the writes of core-api's sandbox 3-D Secure
// scenarios (docs/three-d-secure.md) that name a card: a card_number
// condition is card data, so it is accepted here and nowhere else. The
// number is vaulted (vaulting.VaultCardCondition: sealed as every card
// is, a record no payment method holds) and the scenario goes on to
// core-api with conditions.card_number replaced by
// conditions.card_condition: {"id": the record's token}, an opaque
// reference; core-api reads the card's first 6 digits and last 4 from
// the record over the zone link, and has the record shredded when the
// scenario is deleted or its card condition replaced. mock-3ds, reached
// through the detokenized call, compares the numbers. A write without
// card_number passes through as any other route.
//
// Where the simulator does not exist (production) every one of these
// requests is 404, card number or not, and its body is cleared.
type ThreeDSScenarios struct {
	Vaulting *vaulting.Service
	Auth     *Authenticator
	Core     *Core
	Log      *slog.Logger
	Enabled  bool // false in production
}

// scopeThreeDSScenariosWrite is the scope of a scenario's write.
const scopeThreeDSScenariosWrite = "three-ds-scenarios.write"

const cardConditionPointer = "/conditions/card_number"

// Write serves POST /three-ds-scenarios and PUT
// /three-ds-scenarios/{id}.
func (h *ThreeDSScenarios) Write(ctx *fasthttp.RequestCtx) error {
	body := ctx.Request.Body()
	// The pooled request buffer may hold a card number: cleared once
	// done (Core.Pass and Core.Call send copies).
	defer clear(body)
	if !h.Enabled {
		return apierror.NotFound("route not found")
	}
	key, value, found := cardCondition(body)
	if !found {
		return h.Core.Pass(ctx)
	}
	c, err := h.Auth.Authorize(ctx, scopeThreeDSScenariosWrite)
	if err != nil {
		return err
	}
	if err := apierror.CheckJSONContentType(string(ctx.Request.Header.ContentType())); err != nil {
		return err
	}
	if parseView(body).Get("conditions.card_condition").Exists() {
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail(cardConditionPointer,
			"give card_number or card_condition, not both", "value_error.card_condition"))
	}
	caller := vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(ctx)}
	replacement := `"card_condition":null`
	var token uuid.UUID
	switch value.Type {
	case gjson.Null:
	case gjson.String:
		// A copy: VaultCardCondition clears it, and the body is cleared
		// when this returns.
		number := append([]byte(nil), body[value.Index+1:value.Index+len(value.Raw)-1]...)
		rctx, cancel := requestContext(ctx, time.Minute)
		rec, err := h.Vaulting.VaultCardCondition(rctx, caller, number)
		cancel()
		if err != nil {
			return cardConditionError(err)
		}
		token = rec.Token
		replacement = `"card_condition":{"id":"` + token.String() + `"}`
	default:
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail(cardConditionPointer,
			"must be a card number (a string of 12 to 19 digits) or null", "type_error.str"))
	}
	onward := make([]byte, 0, len(body)+64)
	onward = append(onward, body[:key.Index]...)
	onward = append(onward, replacement...)
	onward = append(onward, body[value.Index+len(value.Raw):]...)
	// Whatever else the body holds goes to core-api: no card number may.
	if err := refuseSensitive(ctx.Path(), onward); err != nil {
		h.shred(caller, token)
		return err
	}
	status, respBody, ct, err := h.Core.Call(ctx, string(ctx.Method()), string(ctx.Path()), onward)
	if err != nil {
		// core-api may have stored the reference: the record is kept, and
		// the vault reconciliation shreds it if no scenario holds it.
		return apierror.BadGateway("core-api did not answer; the scenario may or may not have been written")
	}
	if status/100 != 2 {
		h.shred(caller, token) // refused: no scenario holds it
	}
	coreAnswer{status, respBody, ct}.write(ctx)
	return nil
}

// shred crypto-shreds the card condition token vaulted for a write
// core-api refused; uuid.Nil is none. A failure leaves it to the vault
// reconciliation.
func (h *ThreeDSScenarios) shred(c vaulting.Caller, token uuid.UUID) {
	if token == uuid.Nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Vaulting.Delete(ctx, c, token); err != nil && h.Log != nil {
		h.Log.Error("a refused 3-D Secure scenario's card condition was not shredded", "request_id", c.RequestID, "token", token, "err", err)
	}
}

// cardConditionError is a card_number that is not a card number: 400 at
// it, saying why without repeating it.
func cardConditionError(err error) error {
	var fe vaulting.FieldErrors
	if !errors.As(err, &fe) || len(fe) == 0 {
		return err
	}
	return apierror.BadRequest("invalid request body", strictjson.BodyDetail(cardConditionPointer, fe[0].Message, "value_error.card."+fe[0].Code))
}

// cardCondition finds the card_number member of body's conditions
// object: its key and its value, as views into body with their offsets.
// A number written with JSON escapes is not taken (its bytes are not the
// digits); refuseSensitive then stops it before core-api.
func cardCondition(body []byte) (key, value gjson.Result, found bool) {
	if !gjson.ValidBytes(body) {
		return key, value, false
	}
	conds := parseView(body).Get("conditions")
	if !conds.IsObject() || conds.Index <= 0 {
		return key, value, false
	}
	conds.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "card_number" && k.Index > 0 && v.Index > 0 && !strings.Contains(v.Raw, `\`) {
			key, value, found = k, v, true
			return false
		}
		return true
	})
	return key, value, found
}
