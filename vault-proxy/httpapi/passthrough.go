package httpapi

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/zone"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// Core passes requests on to core-api so that a merchant can use one base
// URL. It is a plain reverse proxy for non-card routes, and the second half
// of card vaulting.
type Core struct {
	client *fasthttp.HostClient
	scheme string
}

// NewCore returns a client for core-api at base (http or https URL).
func NewCore(base string) (*Core, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("core-api URL %q is not an http(s) URL", base)
	}
	return &Core{scheme: u.Scheme, client: &fasthttp.HostClient{
		Addr:                          u.Host,
		IsTLS:                         u.Scheme == "https",
		Name:                          "vault-proxy",
		ReadTimeout:                   60 * time.Second,
		WriteTimeout:                  60 * time.Second,
		MaxIdleConnDuration:           time.Minute,
		MaxResponseBodySize:           16 << 20,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
		// A request that moves money is never sent twice by this hop.
		RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}}, nil
}

// errCoreUnreachable is logged with its cause and answered as 502.
var errCoreUnreachable = apierror.BadGateway("core-api is unreachable")

// hopByHop headers are connection-scoped and never passed on (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// StripHopByHop removes connection-scoped headers, including any named in
// Connection.
func StripHopByHop(h interface {
	Peek(string) []byte
	Del(string)
}) {
	if c := h.Peek("Connection"); len(c) > 0 {
		for _, f := range strings.Split(string(c), ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
}

// coreHeaders are the request headers core-api reads (with Content-Type on
// a passed-on body); no other header crosses into the non-PCI zone, so a
// card number a client puts in some header of its own stays here.
var coreHeaders = []string{"Authorization", accountid.Header, "Idempotency-Key", "Accept"}

// Pass sends ctx's request to core-api (same method, path, query and body,
// the headers core-api reads) and writes core-api's answer to ctx. Card or
// bank data in the body (zone.SensitiveFields at its top level), or a card
// number in the path or query, is refused here and the body cleared:
// core-api never receives a card number, whatever route or method a client
// sent it with (SECURITY.md, "The two zones").
func (c *Core) Pass(ctx *fasthttp.RequestCtx) error {
	if err := refuseSensitive(ctx.Path(), ctx.Request.Body()); err != nil {
		clear(ctx.Request.Body())
		return err
	}
	if err := refuseCardInURI(ctx.Request.URI()); err != nil {
		clear(ctx.Request.Body())
		return err
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethodBytes(ctx.Method())
	req.SetRequestURIBytes(ctx.Request.Header.RequestURI())
	copyHeaders(&req.Header, &ctx.Request.Header, coreHeaders)
	if ct := ctx.Request.Header.ContentType(); len(ct) > 0 {
		req.Header.SetContentTypeBytes(ct)
	}
	req.SetBody(ctx.Request.Body())
	return c.send(ctx, req)
}

func copyHeaders(dst, src *fasthttp.RequestHeader, names []string) {
	for _, h := range names {
		if v := src.Peek(h); len(v) > 0 {
			dst.SetBytesV(h, v)
		}
	}
}

// Send sends a request built by the caller (method, URI path, headers and
// body already set) and writes core-api's answer to ctx.
func (c *Core) send(ctx *fasthttp.RequestCtx, req *fasthttp.Request) error {
	StripHopByHop(&req.Header)
	// The request arrived over TLS; the hop to core-api has its own scheme.
	req.URI().SetScheme(c.scheme)
	req.SetHost(c.client.Addr)
	req.Header.Set("X-Request-Id", RequestID(ctx))
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := c.client.DoTimeout(req, resp, 60*time.Second); err != nil {
		if err == fasthttp.ErrTimeout {
			return apierror.GatewayTimeout("core-api did not answer in time")
		}
		return fmt.Errorf("%w: %v", errCoreUnreachable, err)
	}
	StripHopByHop(&resp.Header)
	resp.Header.Del("Server")
	resp.CopyTo(&ctx.Response)
	return nil
}

// Call sends method path with body and the caller's auth headers to core-api,
// returning its status and body (for the vaulting flow, which must look at
// the answer before passing it back). header holds more headers of
// vault-proxy's own, as name and value pairs.
func (c *Core) Call(ctx *fasthttp.RequestCtx, method, path string, body []byte, header ...string) (status int, respBody []byte, contentType string, err error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.URI().SetScheme(c.scheme)
	req.SetHost(c.client.Addr)
	copyHeaders(&req.Header, &ctx.Request.Header, coreHeaders)
	req.Header.Set("X-Request-Id", RequestID(ctx))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.Header.SetContentType("application/json")
	req.SetBody(body)
	if err := c.client.DoTimeout(req, resp, 60*time.Second); err != nil {
		return 0, nil, "", err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), string(resp.Header.ContentType()), nil
}

// refuseSensitive is a 400 naming each top-level card or bank field of a
// JSON object body (but for the members named in except, which the
// caller has taken care of). A body that is not JSON is refused whole: core-api
// takes only JSON, and a card field inside a body that does not parse (a
// trailing comma, a byte-order mark, a form) cannot be looked for, so it
// must not be passed on either. A buyer's account_number is a merchant's
// customer reference (docs/api-conventions.md, "Buyers"), not a bank
// account: it is card data only
// on the payment method routes.
func refuseSensitive(path, body []byte, except ...string) error {
	if len(body) == 0 {
		return nil
	}
	if !gjson.ValidBytes(body) {
		return apierror.BadRequest("request body is not valid JSON", apierror.Detail{Location: apierror.LocationBody, Pointer: "",
			Message: "not valid JSON", Type: "value_error.jsondecode"})
	}
	root := parseView(body)
	if !root.IsObject() {
		return refuseCardNumbers(root)
	}
	paymentMethods := bytes.HasPrefix(path, []byte("/payment-methods"))
	var details []apierror.Detail
	root.ForEach(func(k, _ gjson.Result) bool {
		if slices.Contains(except, k.Str) {
			return true
		}
		// Any case: core-api would refuse "Number" as unknown, but only
		// after the number had reached it.
		for _, f := range zone.SensitiveFields {
			if strings.EqualFold(k.Str, f) && (paymentMethods || f != "account_number") {
				details = append(details, apierror.Detail{Location: apierror.LocationBody, Pointer: "/" + k.Str,
					Message: "card and bank account data are accepted only by POST /payment-methods for a card, gift card or bank account", Type: "value_error.card_data"})
			}
		}
		return true
	})
	if len(details) > 0 {
		return apierror.BadRequest("card data cannot be sent to this route", details...)
	}
	return refuseCardNumbers(root, except...)
}

// refuseCardNumbers is a 400 naming each string value, at any depth, that
// holds a card number (zone.HoldsCardNumber; the top-level keys in except
// are not searched), and each object with a key that does. The value is
// never repeated: the pointer leads to it.
func refuseCardNumbers(root gjson.Result, except ...string) error {
	details := cardNumbers(nil, root, "", "", 0, except)
	if len(details) > 0 {
		return apierror.BadRequest("card numbers are accepted only by POST /payment-methods, in number", details...)
	}
	return nil
}

// maxScanDepth is deeper than any body core-api accepts: a body nested
// further is refused there before anything in it is stored.
const maxScanDepth = 64

// cardNumbers adds a detail for each card number in v, the value of the
// member key ("" for an array element or the body) at ptr.
func cardNumbers(details []apierror.Detail, v gjson.Result, key, ptr string, depth int, except []string) []apierror.Detail {
	const msg = "looks like a card number; card numbers are accepted only by POST /payment-methods"
	switch {
	case v.Type == gjson.String:
		if zone.HoldsCardNumber(key, v.Str) {
			details = append(details, apierror.Detail{Location: apierror.LocationBody, Pointer: ptr, Message: msg, Type: "value_error.card_data"})
		}
	case depth < maxScanDepth && (v.IsObject() || v.IsArray()):
		i := 0
		v.ForEach(func(k, x gjson.Result) bool {
			p := ptr + "/" + strconv.Itoa(i)
			if v.IsObject() {
				if panscan.Contains(k.Str) {
					details = append(details, apierror.Detail{Location: apierror.LocationBody, Pointer: ptr, Message: "a field name " + msg, Type: "value_error.card_data"})
					return true
				}
				if depth == 0 && slices.Contains(except, k.Str) {
					return true
				}
				p = ptr + "/" + apierror.PointerToken(k.Str)
			}
			i++
			details = cardNumbers(details, x, k.Str, p, depth+1, except)
			return true
		})
	}
	return details
}

// parseView parses body in place. gjson.ParseBytes copies the whole body
// into a string first, a copy of any card number in it that nothing can
// clear; the results here point into body, which the caller clears, so
// any of their text that must outlive body has to be copied (error
// pointers are built by concatenation, which copies).
func parseView(body []byte) gjson.Result {
	if len(body) == 0 {
		return gjson.Result{}
	}
	return gjson.Parse(unsafe.String(&body[0], len(body)))
}

// refuseCardInURI is a 400 when the path or a query parameter holds a card
// number (panscan's definition), percent-encoded or not: core-api would
// hold it in memory, and a merchant's search for it would make it a stored
// search term's neighbour, before any handler of its own could refuse it.
// The detail names the parameter, never the value; a parameter name that is
// itself a card number is not repeated either.
func refuseCardInURI(u *fasthttp.URI) error {
	const msg = "card numbers are accepted only in the body of POST /payment-methods, never in a URL"
	if pathHoldsCardNumber(unescapeLoose(u.PathOriginal(), false)) {
		return apierror.BadRequest("card data cannot be sent in a URL", apierror.Detail{Location: apierror.LocationPath, Pointer: "", Message: msg, Type: "value_error.card_data"})
	}
	var details []apierror.Detail
	for _, pair := range bytes.Split(u.QueryString(), []byte("&")) {
		k, v, _ := bytes.Cut(pair, []byte("="))
		key := unescapeLoose(k, true)
		if !panscan.Contains(key) && !panscan.Contains(unescapeLoose(v, true)) {
			continue
		}
		if panscan.Contains(key) {
			key = ""
		}
		details = append(details, apierror.Detail{Location: apierror.LocationQuery, Pointer: key, Message: msg, Type: "value_error.card_data"})
	}
	if len(details) > 0 {
		return apierror.BadRequest("card data cannot be sent in a URL", details...)
	}
	return nil
}

// pathHoldsCardNumber searches a path's segments as identifiers
// (panscan.InIdentifier: a merchant account id "a<card number>a" holds
// one), except canonical UUIDs, the ids the services generate, whose
// digits would otherwise read as a card number about once in a thousand.
func pathHoldsCardNumber(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if id, err := uuid.Parse(seg); err == nil && id.String() == seg {
			continue
		}
		if panscan.InIdentifier(seg) || panscan.Contains(seg) {
			return true
		}
	}
	return false
}

// unescapeLoose percent-decodes b as core-api's net/http would read it,
// keeping a malformed escape as it is rather than giving up: a number
// behind one bad escape must still be found.
func unescapeLoose(b []byte, plusIsSpace bool) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]):
			out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
		case c == '+' && plusIsSpace:
			out = append(out, ' ')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
