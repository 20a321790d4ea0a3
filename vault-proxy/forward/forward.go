// Package forward turns a request template with {{ CARD_* }} placeholders
// into a sent request: it checks every placeholder before anything is
// revealed, opens the cards, renders the body into a scratch buffer, lets
// the caller apply authentication and send, zeroes the buffer, and audits
// the call by name and outcome only. Detokenized processor calls from
// core-api and merchants' /vault-forward requests both go through it.
package forward

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/card"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/networktoken"
	"github.com/payorch/vault-proxy/outbound"
	"github.com/payorch/vault-proxy/substitute"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
)

// NetworkTokens provisions network tokens and cryptograms
// (docs/network-tokens.md). A nil NetworkTokens makes every network-token placeholder
// unavailable, which the _OR_EMPTY_STRING forms turn into "".
type NetworkTokens interface {
	// Token returns the card's network token, its expiry and its id,
	// provisioning one on first use.
	Token(ctx context.Context, c vaulting.Caller, r *vaulting.Revealed) (token []byte, expiry card.Expiry, id uuid.UUID, err error)
	// Cryptogram returns a fresh one-time cryptogram for the card's token
	// id, the one Token gave this request: the cryptogram must belong to
	// the token it is sent with, even if the card's token has changed
	// since.
	Cryptogram(ctx context.Context, c vaulting.Caller, r *vaulting.Revealed, id uuid.UUID) ([]byte, error)
}

// Engine renders and sends.
type Engine struct {
	Vaulting      *vaulting.Service
	NetworkTokens NetworkTokens
	Now           func() time.Time
}

// Request is one call to make.
type Request struct {
	Caller      vaulting.Caller
	Action      string // audit action: "detokenize" or "forward"
	Purpose     string
	Method      string
	URL         *url.URL
	Header      *fasthttp.RequestHeader // headers to send (already filtered by the caller)
	ContentType string
	Body        []byte // the template
	Tokens      []uuid.UUID
	Options     substitute.Options
	// SecurityCodeFor names the transaction whose authorization, resumed
	// after its 3-D Secure challenge, this call is: a security code
	// placeholder takes the code held for that challenge
	// (vaulting.Service.RevealFor). Empty: the card's own hold.
	SecurityCodeFor string
	// Audit adds names (never values) to the audit record's detail, e.g.
	// the authentication method ids a forward applied. It is read when the
	// record is written, after the send func has returned, so the send
	// func may add what it did with the answer (a detokenized call's
	// masked card numbers).
	Audit map[string]any
}

// SendFunc applies authentication and sends req; resp receives the answer.
type SendFunc func(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error

// Result is what the audit log and the caller learn of a sent call.
type Result struct {
	Placeholders []string
	Duration     time.Duration
}

// ErrTokensNotFound is returned when a token is not the caller's.
var ErrTokensNotFound = vaultproxy.ErrNotFound

// methods are the HTTP methods a request carrying card data may use, for
// every caller: /vault-forward's merchants and core-api's detokenized
// calls. A processor API needs no other; HEAD, OPTIONS, TRACE and CONNECT
// would only put card data where it has no use.
var methods = [...]string{fasthttp.MethodGet, fasthttp.MethodPost, fasthttp.MethodPut, fasthttp.MethodPatch, fasthttp.MethodDelete}

// methodNames lists methods for error messages.
var methodNames = strings.Join(methods[:], ", ")

// MethodNames is "GET, POST, PUT, PATCH, DELETE", for error messages.
func MethodNames() string { return methodNames }

// Method returns the allowed method that name names, in any case, as it
// is sent (upper case); false when name names none of them.
func Method[T ~string | ~[]byte](name T) (string, bool) {
	for _, m := range methods {
		if len(name) == len(m) && equalFoldUpper(name, m) {
			return m, true
		}
	}
	return "", false
}

// equalFoldUpper reports whether b is upper, an upper-case ASCII word, in
// any case.
func equalFoldUpper[T ~string | ~[]byte](b T, upper string) bool {
	for i := range len(upper) {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// RequestLineError is a method or URL the engine refuses to write into a
// request line. fasthttp writes both verbatim: a method holding CR LF
// would split the request and send card data in a second one of the
// caller's making, a space in the query would end the target early. This
// is the check no caller can miss: /vault-forward refuses such headers
// before it gets here, a detokenized call maps Field to its own request's
// fields. The error never quotes the value.
type RequestLineError struct {
	Field string // "method" or "target" (the URL's path and query)
}

func (e *RequestLineError) Error() string {
	if e.Field == "method" {
		return "forward: the method must be one of " + methodNames
	}
	return "forward: the URL's path and query must hold no spaces, control characters or non-ASCII bytes"
}

// checkRequestLine returns r's method in upper case, or the reason r
// cannot be written into a request line.
func checkRequestLine(r *Request) (string, error) {
	method, ok := Method(r.Method)
	if !ok {
		return "", &RequestLineError{Field: "method"}
	}
	// The target as fasthttp will write it: SetRequestURI(r.URL.String())
	// keeps net/url's escaped path and its raw query.
	if outbound.CheckTarget(r.URL.RequestURI()) != nil {
		return "", &RequestLineError{Field: "target"}
	}
	return method, nil
}

// Send renders r and passes it to send. Placeholder problems are returned as
// *substitute.Error, and a method or URL that cannot be written into a
// request line as *RequestLineError, before any card is opened or any byte
// is sent. r.Method may be in any case; it is sent in upper case.
func (e *Engine) Send(ctx context.Context, r Request, resp *fasthttp.Response, send SendFunc) (Result, error) {
	start := time.Now()
	tpl, err := substitute.Parse(r.Body, r.Options)
	if err != nil {
		return Result{}, err
	}
	if err := tpl.CheckIndexes(len(r.Tokens)); err != nil {
		return Result{}, err
	}
	if r.Method, err = checkRequestLine(&r); err != nil {
		return Result{}, err
	}
	names := make([]string, len(tpl.Placeholders()))
	withCode := false
	for i, p := range tpl.Placeholders() {
		names[i] = p.Name
		withCode = withCode || p.Field == substitute.SecurityCode
	}
	res := Result{Placeholders: names}

	// The reveal holds room for the record written after the send: a
	// call that could not be recorded is not made.
	cards, recorded, err := e.Vaulting.RevealFor(ctx, r.Caller, r.Action, r.Purpose, r.Tokens, withCode, r.SecurityCodeFor)
	if err != nil {
		return res, err
	}
	defer recorded.Release() // every path below records; this is for one that would not
	audit := func(outcome string, status int, rule string) {
		e.auditOutcome(ctx, recorded, &r, outcome, names, time.Since(start), status, rule)
	}
	defer func() {
		for _, c := range cards {
			c.Zero()
		}
	}()
	if err := checkKinds(tpl, cards, r.Options); err != nil {
		audit("failure: "+err.(*substitute.Error).Code, 0, "")
		return res, err
	}

	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if r.Header != nil {
		r.Header.CopyTo(&req.Header)
	}
	req.Header.SetMethod(r.Method)
	// The outbound client disables path normalising: the target gets exactly
	// the path the caller wrote (signatures cover it).
	req.SetRequestURI(r.URL.String())
	if r.ContentType != "" {
		req.Header.SetContentType(r.ContentType)
	}

	buf := bufPool.Get()
	defer func() {
		// The rendered body held card numbers: clear both fasthttp's copy
		// and our buffer before they go back to their pools. The request's
		// body may be buf itself (SetBodyRaw), so it is cleared and let go
		// first: once buf is in the pool, another forward may be rendering
		// into it.
		clear(req.Body())
		req.ResetBody()
		clear(buf.B[:cap(buf.B)])
		bufPool.Put(buf)
	}()
	rv := &resolver{ctx: ctx, e: e, caller: r.Caller, cards: cards}
	defer rv.zero()
	buf.B, err = tpl.Render(buf.B[:0], substitute.EncodingFor(r.ContentType), rv.resolve)
	if err != nil {
		outcome := "failure: placeholder"
		if se := (*substitute.Error)(nil); !errors.As(err, &se) {
			outcome = "failure: network_token" // the vault's own failure to serve one
		}
		audit(outcome, 0, "")
		return res, err
	}
	req.SetBodyRaw(buf.B)

	err = send(ctx, req, resp)
	res.Duration = time.Since(start)
	if err != nil {
		// A destination refused at connect time (a name that resolved to a
		// private or metadata address) is audited with the rule that
		// refused it, as a refusal before the send is (SECURITY.md, Audit).
		var rule string
		var ruled interface{ RefusalRule() string }
		if errors.As(err, &ruled) {
			rule = ruled.RefusalRule()
		}
		audit("failure: "+errorCode(err), 0, rule)
		return res, err
	}
	audit("success", resp.StatusCode(), "")
	return res, nil
}

// auditOutcome records the outcome of r's call with its detail: names,
// never values, in the room its reveal held (o; nil records without one).
// The engine's own names win over the caller's (r.Audit). A status of 0
// (nothing answered) and an empty refusal rule are left out.
func (e *Engine) auditOutcome(ctx context.Context, o *vaulting.Outcome, r *Request, outcome string, names []string, elapsed time.Duration, status int, rule string) {
	d := detailPool.Get().(map[string]any)
	defer putDetail(d)
	for k, v := range r.Audit {
		d[k] = v
	}
	d["placeholders"], d["host"], d["method"], d["duration_ms"] = names, r.URL.Host, r.Method, elapsed.Milliseconds()
	if status > 0 {
		d["status"] = status
	}
	if rule != "" {
		d["rule"] = rule
	}
	if o != nil {
		o.Record(ctx, outcome, d)
		return
	}
	e.Vaulting.AuditOutcome(ctx, r.Caller, r.Action, r.Purpose, r.Tokens, outcome, d)
}

// detailPool holds the maps of audit details. AuditOutcome has written the
// record when it returns (it keeps no detail), so a forward's map serves
// the next one rather than being allocated, filled and collected each time.
var detailPool = sync.Pool{New: func() any { return make(map[string]any, 8) }}

func putDetail(d map[string]any) {
	if len(d) > 16 { // do not keep a map grown by a large r.Audit alive
		return
	}
	clear(d)
	detailPool.Put(d)
}

// checkKinds refuses, before anything is rendered, placeholders that
// name a payment method of another kind than theirs: a card's fields of
// a gift card or bank account, a gift card's PIN of anything else. A gift
// card's number goes only where its PIN may (opts.AllowGiftCards: core-
// api's gift card calls), never to a merchant's /vault-forward.
func checkKinds(tpl *substitute.Template, cards []*vaulting.Revealed, opts substitute.Options) error {
	for _, p := range tpl.Placeholders() {
		kind := cards[p.Index-1].Card.Kind
		ok := kind == vaultproxy.KindCard && p.Field != substitute.GiftCardPIN
		if kind == vaultproxy.KindGiftCard && opts.AllowGiftCards {
			ok = p.Field == substitute.GiftCardPIN || p.Field == substitute.CardNumber
		}
		if !ok {
			return &substitute.Error{Placeholder: p.Name, Code: "placeholder_not_allowed",
				Message: fmt.Sprintf("placeholder %s: not available for payment method %d (a %s)", p.Name, p.Index, kind)}
		}
	}
	return nil
}

type resolver struct {
	ctx    context.Context
	e      *Engine
	caller vaulting.Caller
	cards  []*vaulting.Revealed
	nt     map[int]*ntValue

	// scratch holds a formatted expiry until Render has copied it.
	scratch [8]byte
}

// ntValue is one card's network token values for one request. The
// cryptogram is fetched once, on its first placeholder: a cryptogram is
// single-use at the network, so a body naming CARD_CRYPTOGRAM_1 twice (say
// as cryptogram and as authentication value) must carry the same one.
type ntValue struct {
	token  []byte
	expiry card.Expiry
	id     uuid.UUID
	err    error

	cryptogram    []byte
	cryptogramErr error
	cryptogramSet bool
}

// zero clears the network tokens and cryptograms the render used.
func (rv *resolver) zero() {
	for _, v := range rv.nt {
		clear(v.token)
		clear(v.cryptogram)
	}
}

func unavailable(p substitute.Placeholder, what string) error {
	return &substitute.Error{Placeholder: p.Name, Code: "value_unavailable", Message: fmt.Sprintf("placeholder %s: %s", p.Name, what)}
}

func (rv *resolver) resolve(p substitute.Placeholder) ([]byte, error) {
	c := rv.cards[p.Index-1]
	switch p.Field {
	case substitute.CardNumber:
		return c.Number, nil
	case substitute.CardExpiry:
		var exp card.Expiry
		if err := exp.UnmarshalText([]byte(c.Card.ExpirationDate)); err != nil {
			return nil, unavailable(p, "the payment method has no expiry")
		}
		v, err := exp.AppendFormat(rv.scratch[:0], p.Format)
		if err != nil {
			return nil, unavailable(p, "the expiry cannot be formatted")
		}
		return v, nil
	case substitute.SecurityCode:
		if c.SecurityCode == nil {
			return nil, unavailable(p, "no security code is held for this payment method")
		}
		return c.SecurityCode, nil
	case substitute.GiftCardPIN:
		if len(c.PIN) == 0 {
			return nil, unavailable(p, "no PIN is held for this payment method")
		}
		return c.PIN, nil
	}
	v, err := rv.networkValue(p, c)
	if err != nil {
		// Only the card's having no usable token is the placeholder's to
		// answer for; the vault's own failure (its database, Vault, a
		// deadline) is a server error, not a 400 nor an empty value sent
		// on as if the card had none.
		if !errors.Is(err, errNoTokenService) && !networktoken.Unavailable(err) {
			return nil, err
		}
		if p.OrEmpty {
			return nil, nil
		}
		return nil, unavailable(p, "network token provisioning failed")
	}
	return v, nil
}

// errNoTokenService: an engine without NetworkTokens serves no network
// token.
var errNoTokenService = errors.New("forward: no token service")

func (rv *resolver) networkValue(p substitute.Placeholder, c *vaulting.Revealed) ([]byte, error) {
	if rv.e.NetworkTokens == nil {
		return nil, errNoTokenService
	}
	if rv.nt == nil {
		rv.nt = map[int]*ntValue{}
	}
	v, ok := rv.nt[p.Index]
	if !ok {
		v = &ntValue{}
		v.token, v.expiry, v.id, v.err = rv.e.NetworkTokens.Token(rv.ctx, rv.caller, c)
		rv.nt[p.Index] = v
	}
	if v.err != nil {
		return nil, v.err
	}
	switch p.Field {
	case substitute.NetworkToken:
		return v.token, nil
	case substitute.NetworkTokenExpiry:
		s, err := v.expiry.FormatAs(p.Format)
		return []byte(s), err
	}
	if !v.cryptogramSet {
		v.cryptogram, v.cryptogramErr = rv.e.NetworkTokens.Cryptogram(rv.ctx, rv.caller, c, v.id)
		v.cryptogramSet = true
	}
	return v.cryptogram, v.cryptogramErr
}

// errorCode names a send failure for the audit log.
func errorCode(err error) string {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		return coded.ErrorCode()
	}
	return "send"
}
