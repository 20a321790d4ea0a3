package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/zone"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/panmask"
	"github.com/payorch/vault-proxy/processordest"
	"github.com/payorch/vault-proxy/substitute"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"
)

// Detokenize serves core-api's detokenized processor calls on the internal
// listener.
type Detokenize struct {
	Engine       *forward.Engine
	Destinations *processordest.Set
	Log          *slog.Logger

	// masked counts the answers in which card numbers were masked.
	masked panmask.Counter
}

// Masked reads the count of destination answers in which card numbers
// were masked, and of the numbers, since the handler was made.
func (h *Detokenize) Masked() panmask.Totals { return h.masked.Load() }

// Handle answers POST /internal/detokenize.
// maxTransactionIDLen bounds a transaction id core-api names (a UUID
// today): a security code's hold is keyed by it.
const maxTransactionIDLen = 100

func (h *Detokenize) Handle(ctx *fasthttp.RequestCtx) error {
	c, err := internalCaller(ctx)
	if err != nil {
		return err
	}
	var in zone.DetokenizeRequest
	if err := decodeInternal(ctx, &in); err != nil {
		return err
	}
	if len(in.PaymentMethod) == 0 || len(in.PaymentMethod) > 100 {
		return apierror.BadRequest("payment_methods must list 1 to 100 tokens")
	}
	if len(in.SecurityCodeFor) > maxTransactionIDLen {
		return apierror.BadRequest("security_code_for must be a transaction id",
			apierror.Detail{Location: apierror.LocationBody, Pointer: "/security_code_for", Message: "at most 100 characters", Type: "value_error.any_str.max_length"})
	}
	tokens := make([]uuid.UUID, len(in.PaymentMethod))
	for i, s := range in.PaymentMethod {
		if tokens[i], err = uuid.Parse(s); err != nil {
			return apierror.NotFound("payment method not found")
		}
	}
	u, err := h.Destinations.URL(in.Destination, in.Path)
	if err != nil {
		if errors.Is(err, processordest.ErrUnknown) {
			return apierror.New(422, "forward_host_not_allowed", "destination "+in.Destination+" is not configured")
		}
		return badPath()
	}
	method := in.Method
	if method == "" {
		method = fasthttp.MethodPost
	}
	timeout := 30 * time.Second
	if in.TimeoutMillis > 0 && in.TimeoutMillis <= 60_000 {
		timeout = time.Duration(in.TimeoutMillis) * time.Millisecond
	}
	var hdr fasthttp.RequestHeader
	ct := "application/json"
	for k, v := range in.Headers {
		// fasthttp writes a header name as given: one holding CR LF would
		// smuggle headers (a second Host, Transfer-Encoding) to the
		// processor. core-api is outside the PCI zone, and not trusted
		// with the request's framing.
		if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return apierror.BadRequest("headers must have HTTP token names and values without control characters",
				apierror.Detail{Location: apierror.LocationBody, Pointer: "/headers", Message: "not a valid HTTP header", Type: "value_error.header"})
		}
		if strings.EqualFold(k, "content-type") {
			ct = v
			continue
		}
		if forbiddenForwardHeaders[strings.ToLower(k)] || strings.EqualFold(k, "accept-encoding") {
			continue // the connection's and the body's own, written here
		}
		hdr.Set(k, v)
	}
	StripHopByHop(&hdr)
	// The answer is searched for card numbers before core-api gets it,
	// which a compressed body would hide.
	hdr.Set(fasthttp.HeaderAcceptEncoding, "identity")

	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	rctx, cancel := requestContext(ctx, timeout+30*time.Second)
	defer cancel()
	var out zone.DetokenizeResponse
	audit := make(map[string]any, 1)
	_, err = h.Engine.Send(rctx, forward.Request{
		Caller: c, Action: "detokenize", Purpose: in.Purpose, Method: method, URL: u, Header: &hdr,
		ContentType: ct, Body: []byte(in.Body), Tokens: tokens, Audit: audit, SecurityCodeFor: in.SecurityCodeFor,
		Options: substitute.Options{AllowSecurityCode: in.Purpose == vaulting.PurposeAuthorization,
			AllowGiftCards: vaulting.GiftCardPurpose(in.Purpose)},
	}, resp, func(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
		if err := h.Destinations.Do(ctx, req, resp, timeout); err != nil {
			return err
		}
		if enc := resp.Header.ContentEncoding(); len(enc) > 0 && !strings.EqualFold(string(enc), "identity") {
			// Asked for identity and answered compressed anyway: a body
			// that cannot be searched does not go to core-api, and
			// decompressing an untrusted answer without a bound is a
			// memory bomb.
			return &sendFailure{api: apierror.New(502, "forward_response_encoded",
				"the destination answered compressed although it was asked for identity; the answer was not passed on")}
		}
		// The answer is masked here, inside the send, so that the
		// engine's audit record of the call, written when this returns,
		// says what was masked.
		var found panmask.Found
		out, found = maskedAnswer(resp)
		if found.Total() > 0 {
			audit["masked_card_numbers"] = found
			h.masked.Add(found)
			if h.Log != nil {
				h.Log.WarnContext(ctx, "a destination answered with card numbers; masked before the answer went to core-api",
					"request_id", c.RequestID, "destination", in.Destination,
					"status_line", found.StatusLine, "headers", found.Headers, "body", found.Body)
			}
		}
		return nil
	})
	if le := (*forward.RequestLineError)(nil); errors.As(err, &le) {
		// core-api's method and path, which the engine refused to write
		// into the request line before opening any card.
		if le.Field == "method" {
			return apierror.BadRequest("method must be one of "+forward.MethodNames(),
				apierror.Detail{Location: apierror.LocationBody, Pointer: "/method", Message: "not an allowed HTTP method", Type: "value_error.enum"})
		}
		return badPath()
	}
	if err != nil {
		return sendError(err)
	}
	return WriteJSON(ctx, fasthttp.StatusOK, out)
}

// maskedAnswer is the destination's answer as core-api receives it, with
// every card number masked (panmask): core-api is outside the PCI zone,
// and a processor may echo the request or quote the number in an error.
// A JSON body stays JSON. /vault-forward does not mask: a merchant
// receives its own destination's answer.
func maskedAnswer(resp *fasthttp.Response) (zone.DetokenizeResponse, panmask.Found) {
	var found panmask.Found
	// The reason phrase is not passed on; it is masked all the same, so
	// that nothing that reads the answer after this can show it.
	if reason, n := panmask.Text(resp.Header.StatusMessage()); n > 0 {
		resp.Header.SetStatusMessage(reason)
		found.StatusLine = n
	}
	out := zone.DetokenizeResponse{Status: resp.StatusCode(), Headers: map[string]string{}}
	StripHopByHop(&resp.Header)
	for k, v := range resp.Header.All() {
		if strings.EqualFold(string(k), fasthttp.HeaderContentLength) {
			continue // of the body before masking; core-api reads the JSON
		}
		name, n := panmask.String(strings.ToLower(string(k)))
		value, m := panmask.String(string(v))
		out.Headers[name] = value
		found.Headers += n + m
	}
	// A masked body is a new slice; an unmasked one is copied out of
	// resp, which goes back to fasthttp's pool.
	if b := resp.Body(); json.Valid(b) {
		if out.Body, found.Body = panmask.JSON(b); found.Body == 0 {
			out.Body = append(json.RawMessage(nil), b...)
		}
	} else {
		var masked []byte
		masked, found.Body = panmask.Text(b)
		out.Text = string(masked)
	}
	return out, found
}

// badPath refuses a detokenize request's path.
func badPath() error {
	msg := "path must be an absolute path, without spaces, control characters or non-ASCII bytes (percent-encode them)"
	return apierror.BadRequest(msg, apierror.Detail{Location: apierror.LocationBody, Pointer: "/path", Message: msg, Type: "value_error.path"})
}

// sendError maps placeholder and send failures to the envelope. Nothing of
// the rendered request is ever echoed.
func sendError(err error) error {
	if errors.Is(err, vaultproxy.ErrAuditUnavailable) {
		return err // the router's 503
	}
	var se *substitute.Error
	if errors.As(err, &se) {
		return apierror.BadRequest(se.Message, apierror.Detail{
			Location: apierror.LocationBody, Pointer: "{{ " + se.Placeholder + " }}", Message: se.Message, Type: "value_error.placeholder." + se.Code,
		})
	}
	if errors.Is(err, forward.ErrTokensNotFound) {
		return apierror.NotFound("payment method not found")
	}
	var coded interface {
		ErrorCode() string
		HTTPStatus() int
	}
	if errors.As(err, &coded) {
		return apierror.New(coded.HTTPStatus(), coded.ErrorCode(), "the request could not be sent: "+coded.ErrorCode())
	}
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return apierror.New(504, "forward_timeout", "the destination did not answer in time")
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return apierror.New(502, "forward_response_too_large", "the destination's response is too large")
	}
	return apierror.New(502, "forward_failed", "the request could not be sent")
}
