package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/payorch/vault-proxy/mle"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/signing"
	"github.com/payorch/vault-proxy/substitute"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"
)

// Headers of POST /vault-forward (docs/vault-forward.md).
const (
	HeaderForwardURL             = "x-vault-forward-url"
	HeaderForwardMethod          = "x-vault-forward-http-method"
	HeaderForwardPaymentMethods  = "x-vault-forward-payment-methods"
	HeaderForwardAuthentications = "x-vault-forward-authentications"
	HeaderForwardTimeout         = "x-vault-forward-timeout"
	HeaderForwardHeaderPrefix    = "x-vault-forward-header-"
	HeaderUpstreamStatus         = "x-vault-forward-upstream-status"

	ScopeForwardWrite = "vault-forward.write"

	// CodeAuthenticationOrderInvalid: x-vault-forward-authentications
	// names a signature method before an mle method (forwardconfig.CheckOrder).
	CodeAuthenticationOrderInvalid = "authentication_order_invalid"
)

// Limits of POST /vault-forward.
const (
	// MaxForwardBody caps the request template. The rendered body (cards
	// substituted, possibly encrypted) is capped again by the outbound
	// client's Policy.MaxRequestBytes.
	MaxForwardBody         = 1 << 20
	MaxForwardTokens       = 100
	MaxForwardAuths        = 10
	DefaultForwardTimeout  = 30 * time.Second
	MaxForwardTimeout      = 60 * time.Second
	forwardTimeoutMaxWhole = 60
)

// forbiddenForwardHeaders may not be set through x-vault-forward-header-*:
// they are connection-scoped or describe the body, which the proxy writes.
var forbiddenForwardHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true, "keep-alive": true,
	"proxy-connection": true, "proxy-authorization": true, "proxy-authenticate": true, "te": true, "trailer": true,
	"upgrade": true, "content-type": true, "expect": true,
}

var forwardHeaderPrefix = []byte("x-vault-forward-")

// Forward serves the merchant-facing POST /vault-forward: a request built
// by the merchant with {{ CARD_* }} placeholders, sent once to a third
// party after the destination is checked, the cards substituted and the
// named authentication methods applied, in order.
type Forward struct {
	Engine  *forward.Engine
	Configs *forwardconfig.Service
	Client  *outbound.Client
	Auth    *Authenticator
	// RequireListedHost (production) always hands the merchant's config
	// hosts to the outbound client, which then refuses any other host.
	RequireListedHost bool
	Log               *slog.Logger
	Now               func() time.Time
}

// forwardInput is the parsed x-vault-forward-* headers.
type forwardInput struct {
	url     *url.URL
	method  string
	header  *fasthttp.RequestHeader // nil when no x-vault-forward-header-* was sent
	tokens  []uuid.UUID
	auths   []uuid.UUID
	timeout time.Duration
	ctype   string
	authIDs []string
	rawURL  string
}

// The x-vault-forward-* header names after the common prefix, as bytes:
// parseForward compares them without lower-casing a copy of every header.
var (
	forwardURLSuffix            = []byte(HeaderForwardURL[len("x-vault-forward-"):])
	forwardMethodSuffix         = []byte(HeaderForwardMethod[len("x-vault-forward-"):])
	forwardPaymentMethodsSuffix = []byte(HeaderForwardPaymentMethods[len("x-vault-forward-"):])
	forwardAuthsSuffix          = []byte(HeaderForwardAuthentications[len("x-vault-forward-"):])
	forwardTimeoutSuffix        = []byte(HeaderForwardTimeout[len("x-vault-forward-"):])
	forwardHeaderSuffix         = []byte(HeaderForwardHeaderPrefix[len("x-vault-forward-"):])
)

// parseForward reads and checks every x-vault-forward-* header. Unknown
// x-vault-forward-* headers are refused (a misspelt one would otherwise be
// silently ignored).
func parseForward(ctx *fasthttp.RequestCtx) (*forwardInput, error) {
	in := &forwardInput{method: fasthttp.MethodPost, timeout: DefaultForwardTimeout}
	var errs []apierror.Detail
	bad := func(name, msg, typ string) {
		errs = append(errs, apierror.Detail{Location: apierror.LocationHeader, Pointer: name, Message: msg, Type: typ})
	}
	var rawURL string
	// The id lists are parsed from fasthttp's buffer, stable during this
	// call: only the parsed ids are kept.
	var tokens, auths []byte
	var seenURL, seenTokens, seenAuths bool
	for k, v := range ctx.Request.Header.All() {
		if len(k) < len(forwardHeaderPrefix) || !bytes.EqualFold(k[:len(forwardHeaderPrefix)], forwardHeaderPrefix) {
			continue // the request's own headers: most of them, and never copied
		}
		rest := k[len(forwardHeaderPrefix):]
		switch {
		case bytes.EqualFold(rest, forwardURLSuffix):
			rawURL, seenURL = string(bytes.TrimSpace(v)), true
		case bytes.EqualFold(rest, forwardMethodSuffix):
			m, ok := forward.Method(bytes.TrimSpace(v))
			if !ok {
				bad(HeaderForwardMethod, "must be one of "+forward.MethodNames(), "value_error.enum")
			}
			in.method = m
		case bytes.EqualFold(rest, forwardPaymentMethodsSuffix):
			tokens, seenTokens = v, true
		case bytes.EqualFold(rest, forwardAuthsSuffix):
			auths, seenAuths = v, true
		case bytes.EqualFold(rest, forwardTimeoutSuffix):
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil || n < 1 || n > forwardTimeoutMaxWhole {
				bad(HeaderForwardTimeout, "must be a whole number of seconds from 1 to 60", "value_error.number")
				continue
			}
			in.timeout = time.Duration(n) * time.Second
		case len(rest) >= len(forwardHeaderSuffix) && bytes.EqualFold(rest[:len(forwardHeaderSuffix)], forwardHeaderSuffix):
			name := strings.ToLower(string(k))
			target := name[len(HeaderForwardHeaderPrefix):]
			// A name that is not an HTTP token (fasthttp's server lets a
			// space through) would slip past the forbidden list as
			// "host " and reach a lenient target as Host.
			if target == "" || !httpguts.ValidHeaderFieldName(target) || forbiddenForwardHeaders[target] || strings.HasPrefix(target, "x-vault-forward-") {
				bad(name, "this header cannot be forwarded", "value_error.header.forbidden")
				continue
			}
			if in.header == nil {
				in.header = new(fasthttp.RequestHeader)
			}
			in.header.AddBytesV(target, v)
		default:
			bad(strings.ToLower(string(k)), "unknown x-vault-forward header", "value_error.extra")
		}
	}

	if !seenURL || rawURL == "" {
		bad(HeaderForwardURL, "the target URL is required", "value_error.missing")
	} else if u, err := url.Parse(rawURL); err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		bad(HeaderForwardURL, "must be an absolute http(s) URL", "value_error.url")
	} else {
		u.Fragment, u.RawFragment = "", "" // never sent on the wire
		if u.Path == "" {
			// Sent as "/" (RFC 9110 4.2.3), so signed as "/": a signature
			// over "?x=1" would not verify at the target.
			u.Path, u.RawPath = "/", ""
		}
		canonicalHost(u)
		in.url, in.rawURL = u, u.String()
	}

	if !seenTokens {
		bad(HeaderForwardPaymentMethods, "list 1 to 100 payment method ids", "value_error.missing")
	} else if ids, ok := parseIDs(tokens, MaxForwardTokens, false); !ok {
		bad(HeaderForwardPaymentMethods, "must be 1 to 100 comma-separated payment method ids", "value_error.uuid_list")
	} else {
		in.tokens = ids
	}
	if seenAuths {
		ids, ok := parseIDs(auths, MaxForwardAuths, true)
		if !ok {
			bad(HeaderForwardAuthentications, "must be 1 to 10 distinct comma-separated authentication method ids", "value_error.uuid_list")
		}
		in.auths = ids
		for _, id := range ids {
			in.authIDs = append(in.authIDs, id.String())
		}
	}
	in.ctype = string(ctx.Request.Header.ContentType())
	if len(errs) > 0 {
		return nil, apierror.BadRequest("the forward request headers are not valid", errs...)
	}
	return in, nil
}

// parseIDs reads a comma-separated list of 1..max UUIDs, each exactly 36
// characters with spaces around it allowed.
func parseIDs(s []byte, max int, distinct bool) ([]uuid.UUID, bool) {
	n := bytes.Count(s, []byte(",")) + 1
	if n > max {
		return nil, false
	}
	out := make([]uuid.UUID, 0, n)
	for part := range bytes.SplitSeq(s, []byte(",")) {
		part = bytes.TrimSpace(part)
		if len(part) != 36 {
			return nil, false
		}
		id, err := uuid.ParseBytes(part)
		// A linear search: distinct lists (authentication methods) hold at
		// most MaxForwardAuths ids.
		if err != nil || (distinct && slices.Contains(out, id)) {
			return nil, false
		}
		out = append(out, id)
	}
	return out, true
}

// canonicalHost rewrites u's authority the way the outbound client sends
// it (lower case, no trailing dot, no default port), so that what a
// signature covers (@authority, @target-uri) is what the target receives.
func canonicalHost(u *url.URL) {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if (port == "443" && strings.EqualFold(u.Scheme, "https")) || (port == "80" && strings.EqualFold(u.Scheme, "http")) {
		port = ""
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if strings.Contains(host, ":") {
		if ip, err := netip.ParseAddr(host); err == nil && ip.Zone() == "" {
			host = ip.String()
		}
		host = "[" + host + "]"
	}
	u.Host = joinHostPort(u.Host, host, port)
}

// joinHostPort returns host, or host:port when there is a port. It returns
// was when that already is the result, as it is for most URLs, so that
// canonicalising them allocates nothing.
func joinHostPort(was, host, port string) string {
	if port == "" {
		return host
	}
	if len(was) == len(host)+1+len(port) && strings.HasPrefix(was, host) && was[len(host)] == ':' && strings.HasSuffix(was, port) {
		return was
	}
	return host + ":" + port
}

// hostListed reports whether the destination is named by one of entries
// (normalised "host" or "host:port"; an entry without a port names only the
// scheme's default port). The outbound client checks again with its own
// matcher; a disagreement can only refuse.
func hostListed(entries []string, u *url.URL) bool {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	for _, e := range entries {
		eh, ep := e, ""
		if strings.HasPrefix(e, "[") {
			end := strings.IndexByte(e, ']')
			if end < 0 {
				continue
			}
			eh, ep = e[1:end], strings.TrimPrefix(e[end+1:], ":")
		} else if h, p, err := net.SplitHostPort(e); err == nil {
			eh, ep = h, p
		}
		if ep == "" {
			ep = "443"
			if u.Scheme == "http" {
				ep = "80"
			}
		}
		if ep != port {
			continue
		}
		if a, err := netip.ParseAddr(eh); err == nil {
			if b, err := netip.ParseAddr(host); err == nil && a == b {
				return true
			}
			continue
		}
		if strings.EqualFold(strings.TrimSuffix(eh, "."), host) {
			return true
		}
	}
	return false
}

// Handle answers POST /vault-forward.
func (h *Forward) Handle(fctx *fasthttp.RequestCtx) error {
	// The send is bounded by x-vault-forward-timeout (at most 60s); the
	// rest (database, Vault) by what is left of this.
	ctx, cancel := requestContext(fctx, MaxForwardTimeout+30*time.Second)
	defer cancel()
	c, err := h.Auth.Authorize(fctx, ScopeForwardWrite)
	if err != nil {
		return err
	}
	body := fctx.Request.Body()
	if len(body) > MaxForwardBody {
		return apierror.TooLarge("the forward body may be at most 1 MiB")
	}
	in, err := parseForward(fctx)
	if err != nil {
		return err
	}
	caller := vaulting.Caller{MerchantAccountID: c.MerchantAccountID, Actor: actor(c), RequestID: RequestID(fctx)}

	// The destination is checked before any card or credential is opened.
	hosts, err := h.Configs.Hosts(ctx, c.MerchantAccountID)
	if err != nil {
		return err
	}
	opts := outbound.CallOptions{Timeout: in.timeout}
	if h.RequireListedHost || hostListed(hosts, in.url) {
		// Listed: the config's hosts bound the call (and let a development
		// or sandbox instance with VAULT_FORWARD_ALLOW_LOOPBACK reach a
		// listed loopback host). Production always passes them, so an
		// unlisted host is refused there.
		opts.AllowedHosts = hosts
	}
	if err := h.Client.CheckURL(in.rawURL, opts); err != nil {
		h.auditRefusal(ctx, caller, in, err)
		return outboundError(err)
	}

	apply, err := h.authenticators(ctx, c.MerchantAccountID, in, &opts)
	if err != nil {
		return err
	}

	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	var audit map[string]any
	if len(in.authIDs) > 0 {
		audit = map[string]any{"authentications": in.authIDs}
	}
	_, err = h.Engine.Send(ctx, forward.Request{
		Caller: caller, Action: "forward", Purpose: "vault-forward", Method: in.method, URL: in.url,
		Header: in.header, ContentType: in.ctype, Body: body, Tokens: in.tokens, Audit: audit,
	}, resp, func(cctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
		now := time.Now
		if h.Now != nil {
			now = h.Now
		}
		for i, a := range apply {
			if err := a(req, now()); err != nil {
				return authFailure(in.authIDs[i], err)
			}
		}
		if err := h.Client.Do(cctx, req, resp, opts); err != nil {
			return sendFailureFrom(err)
		}
		return nil
	})
	if err != nil {
		return h.forwardError(fctx, err)
	}

	WriteUpstreamAnswer(fctx, resp)
	return nil
}

// WriteUpstreamAnswer passes a target's answer back to the caller: its
// status (also in x-vault-forward-upstream-status), its headers less the
// hop-by-hop ones and those vault-proxy writes itself, and its body.
func WriteUpstreamAnswer(fctx *fasthttp.RequestCtx, resp *fasthttp.Response) {
	status := resp.StatusCode()
	StripHopByHop(&resp.Header)
	fctx.Response.Header.SetNoDefaultContentType(true)
	for k, v := range resp.Header.All() {
		if !ownAnswerHeader(k) {
			fctx.Response.Header.AddBytesKV(k, v)
		}
	}
	fctx.Response.Header.Set(HeaderUpstreamStatus, strconv.Itoa(status))
	fctx.SetStatusCode(status)
	fctx.SetBody(resp.Body())
}

// ownAnswerHeaders are written by vault-proxy itself, never copied from the
// target's answer.
var ownAnswerHeaders = [][]byte{[]byte("content-length"), []byte("date"), []byte("x-request-id"), []byte(HeaderUpstreamStatus)}

func ownAnswerHeader(k []byte) bool {
	for _, h := range ownAnswerHeaders {
		if bytes.EqualFold(k, h) {
			return true
		}
	}
	return false
}

// applier applies one authentication method to the rendered request.
type applier func(req *fasthttp.Request, now time.Time) error

// authenticators opens the named methods and prepares them in order. What
// can be checked without the rendered request (ownership, the order of
// signature and mle methods, the method's hosts, mtls key pairs) is checked
// here, before any card is revealed.
func (h *Forward) authenticators(ctx context.Context, merchant string, in *forwardInput, opts *outbound.CallOptions) ([]applier, error) {
	if len(in.auths) == 0 {
		return nil, nil
	}
	methods, err := h.Configs.Open(ctx, merchant, in.auths)
	if err != nil {
		if errors.Is(err, vaultproxy.ErrNotFound) {
			return nil, apierror.NotFound("authentication method not found").WithDetails(apierror.Detail{
				Location: apierror.LocationHeader, Pointer: HeaderForwardAuthentications, Message: "not an authentication method of this merchant account", Type: "value_error.not_found"})
		}
		return nil, err
	}
	var oe *forwardconfig.OrderError
	if err := forwardconfig.CheckOrder(methods); errors.As(err, &oe) {
		sig, enc := in.authIDs[oe.Signature], in.authIDs[oe.MLE]
		msg := "signature method " + sig + " is listed before mle method " + enc
		return nil, apierror.New(400, CodeAuthenticationOrderInvalid,
			msg+": a signature must cover the encrypted body that is sent, so list mle methods before signature methods; nothing was sent",
			apierror.Detail{Location: apierror.LocationHeader, Pointer: HeaderForwardAuthentications, Message: msg, Type: "value_error.authentication_order"})
	}
	out := make([]applier, len(methods))
	for i, m := range methods {
		// A method's credentials go only to the hosts its config lists:
		// a signature (possibly not covering the target URI) is never made
		// for a host the merchant did not put beside it.
		if !hostListed(m.Hosts, in.url) {
			return nil, apierror.New(422, "forward_authentication_not_allowed",
				"authentication method "+in.authIDs[i]+" belongs to a forwarding config that does not list the destination host",
				apierror.Detail{Location: apierror.LocationHeader, Pointer: HeaderForwardAuthentications, Message: "the method's config does not list the destination host", Type: "value_error.host"})
		}
		switch m.Kind {
		case forwardconfig.KindSignature:
			sm, err := signing.FromFields(m.Fields)
			if err != nil {
				return nil, authError(in.authIDs[i], err)
			}
			out[i] = func(req *fasthttp.Request, now time.Time) error {
				return sm.Sign(signing.FromFastHTTP(req), now)
			}
		case forwardconfig.KindMLE:
			em := mle.FromFields(m.Fields)
			out[i] = func(req *fasthttp.Request, _ time.Time) error {
				jwe, err := em.Encrypt(req.Body(), string(req.Header.ContentType()))
				if err != nil {
					return err
				}
				// SetBody copies into fasthttp's buffer; the plaintext
				// buffer is cleared by the engine after the send.
				req.SetBody(jwe)
				req.Header.SetContentType(mle.ContentType)
				return nil
			}
		case forwardconfig.KindMTLS:
			if opts.ClientCertificate != nil {
				return nil, authError(in.authIDs[i], &signing.Error{Code: signing.CodeAuthenticationFailed, Message: "mtls method: only one mtls method may be applied to a forward"})
			}
			cert, err := tls.X509KeyPair([]byte(m.Fields["certificate"]), []byte(m.Fields["private_key"]))
			if err != nil {
				return nil, authError(in.authIDs[i], &signing.Error{Code: signing.CodeAuthenticationFailed, Message: "mtls method: certificate and private_key are not a matching PEM certificate chain and private key"})
			}
			opts.ClientCertificate = &cert
			if ca := m.Fields["ca_certificate"]; ca != "" {
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM([]byte(ca)) {
					return nil, authError(in.authIDs[i], &signing.Error{Code: signing.CodeAuthenticationFailed, Message: "mtls method: ca_certificate holds no PEM certificate"})
				}
				opts.ExtraRootCAs = pool
			}
			out[i] = func(*fasthttp.Request, time.Time) error { return nil }
		default:
			return nil, apierror.Internal(errors.New("forward: unknown authentication kind " + m.Kind))
		}
	}
	return out, nil
}

// authError is a credential that cannot be applied: 400
// authentication_failed, naming the method; the message never carries key
// material (the signing and mle packages guarantee it).
func authError(id string, err error) error {
	msg := err.Error()
	var se *signing.Error
	var me *mle.Error
	switch {
	case errors.As(err, &se):
		msg = se.Message
	case errors.As(err, &me):
		msg = me.Message
	}
	return apierror.New(400, signing.CodeAuthenticationFailed, "authentication method "+id+": "+msg+"; nothing was sent",
		apierror.Detail{Location: apierror.LocationHeader, Pointer: HeaderForwardAuthentications, Message: msg, Type: "value_error.authentication"})
}

// sendFailure is an error of the send func, carrying the code the engine
// writes to the audit log and the envelope it becomes.
type sendFailure struct {
	api *apierror.Error
	err error // for logs only
}

func (f *sendFailure) Error() string     { return f.api.Error() }
func (f *sendFailure) Unwrap() error     { return f.err }
func (f *sendFailure) ErrorCode() string { return f.api.Code }
func (f *sendFailure) HTTPStatus() int   { return f.api.Status }

func authFailure(id string, err error) error {
	return &sendFailure{api: authError(id, err).(*apierror.Error)}
}

func sendFailureFrom(err error) error {
	return &sendFailure{api: outboundError(err), err: err}
}

// outboundError maps the outbound client's typed errors: 400
// forward_invalid_url, 403 forward_host_not_allowed, 413
// forward_request_too_large, 504 forward_timeout, 502 for the rest
// (forward_tls_failed, forward_connection_refused,
// forward_response_too_large, forward_failed).
func outboundError(err error) *apierror.Error {
	var oe *outbound.Error
	if !errors.As(err, &oe) {
		return apierror.New(502, outbound.CodeFailed, "the request could not be sent")
	}
	e := apierror.New(oe.Status(), oe.Code, oe.Message)
	if oe.Code == outbound.CodeInvalidURL || oe.Code == outbound.CodeHostNotAllowed {
		e = e.WithDetails(apierror.Detail{Location: apierror.LocationHeader, Pointer: HeaderForwardURL, Message: oe.Message, Type: "value_error." + oe.Code})
	}
	return e
}

// forwardError turns what Engine.Send returned into the envelope.
func (h *Forward) forwardError(ctx *fasthttp.RequestCtx, err error) error {
	var sf *sendFailure
	if errors.As(err, &sf) {
		if sf.err != nil && h.Log != nil {
			attrs := []any{"request_id", RequestID(ctx), "code", sf.api.Code}
			var oe *outbound.Error
			if errors.As(sf.err, &oe) && oe.Rule != "" {
				attrs = append(attrs, "rule", oe.Rule)
			}
			h.Log.WarnContext(ctx, "forward failed", attrs...)
		}
		return sf.api
	}
	var se *substitute.Error
	if errors.As(err, &se) {
		return sendError(err)
	}
	if errors.Is(err, vaultproxy.ErrNotFound) {
		return apierror.NotFound("payment method not found").WithDetails(apierror.Detail{
			Location: apierror.LocationHeader, Pointer: HeaderForwardPaymentMethods, Message: "not a payment method of this merchant account", Type: "value_error.not_found"})
	}
	return err
}

// auditRefusal records a destination refused before any card was opened.
func (h *Forward) auditRefusal(ctx context.Context, c vaulting.Caller, in *forwardInput, err error) {
	if h.Engine == nil || h.Engine.Vaulting == nil {
		return
	}
	code := outbound.Code(err)
	detail := map[string]any{"host": in.url.Host, "method": in.method}
	var oe *outbound.Error
	if errors.As(err, &oe) && oe.Rule != "" {
		detail["rule"] = oe.Rule
	}
	if len(in.authIDs) > 0 {
		detail["authentications"] = in.authIDs
	}
	h.Engine.Vaulting.AuditOutcome(ctx, c, "forward", "vault-forward", in.tokens, "failure: "+code, detail)
}
