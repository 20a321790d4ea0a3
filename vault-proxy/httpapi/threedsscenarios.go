package httpapi

import (
	"errors"
	"strings"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// ThreeDSScenarios takes the writes of core-api's sandbox 3-D Secure
// scenarios (docs/three-d-secure.md) that name a card: a card_number
// condition is card data, so it is accepted here and nowhere else. The
// scenario goes on to core-api with conditions.card_number replaced by
// conditions.card_fingerprint, the card's fingerprint in the merchant
// account (the one its payment method carries): core-api matches cards
// by fingerprint and never receives the number, and nothing here stores
// it. A write without card_number passes through as any other route.
//
// Where the simulator does not exist (production) every one of these
// requests is 404, card number or not, and its body is cleared.
type ThreeDSScenarios struct {
	Vaulting *vaulting.Service
	Auth     *Authenticator
	Core     *Core
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
	if parseView(body).Get("conditions.card_fingerprint").Exists() {
		return apierror.BadRequest("invalid request body", strictjson.BodyDetail(cardConditionPointer,
			"give card_number or card_fingerprint, not both", "value_error.card_condition"))
	}
	replacement := `"card_fingerprint":null`
	switch value.Type {
	case gjson.Null:
	case gjson.String:
		fp, err := h.Vaulting.CardFingerprint(c.MerchantAccountID, body[value.Index+1:value.Index+len(value.Raw)-1])
		if err != nil {
			return cardConditionError(err)
		}
		replacement = `"card_fingerprint":"` + fp + `"`
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
		return err
	}
	status, respBody, ct, err := h.Core.Call(ctx, string(ctx.Method()), string(ctx.Path()), onward)
	if err != nil {
		return apierror.BadGateway("core-api did not answer; the scenario may or may not have been written")
	}
	coreAnswer{status, respBody, ct}.write(ctx)
	return nil
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
