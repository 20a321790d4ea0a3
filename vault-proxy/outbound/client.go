package outbound

import (
	"container/list"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/payorch/certs"
	"github.com/valyala/fasthttp"
)

const (
	// idleConnTimeout closes kept-alive connections idle this long. It is
	// short on purpose: requests are never retried, so a connection the
	// destination has already closed (Node.js closes idle ones after 5s)
	// would fail a forward instead of being silently replaced.
	idleConnTimeout = 4 * time.Second
	// readBufferSize bounds response headers (fasthttp fails a response
	// whose headers do not fit).
	readBufferSize = 16 << 10
)

// Client sends requests to third parties under a Policy. It is safe for
// concurrent use. Create it with New.
type Client struct {
	allowed    []string // Policy.AllowedHosts, normalised
	requireTLS bool
	requireAL  bool
	loopbackOK bool
	extraRoots *x509.CertPool

	resolver         Resolver
	maxResponseBytes int
	maxRequestBytes  int
	defaultTimeout   time.Duration
	maxTimeout       time.Duration
	maxConnsPerHost  int
	maxTLSClients    int

	dialers [2]net.Dialer // [0] never loopback, [1] loopback allowed
	// testDial replaces the network dial in tests: it receives only the
	// checked "ip:port".
	testDial func(ctx context.Context, network, address string) (net.Conn, error)

	base [2]*bucket // no client certificate, no per-call roots; [1] loopback allowed

	closed  atomic.Bool
	mu      sync.Mutex
	buckets map[bucketKey]*bucket
	lru     list.List // of *bucket, most recently used first
}

// bucket is one fasthttp.Client: one client identity (certificate and
// extra roots) and one loopback permission. fasthttp keeps a HostClient,
// and so a connection pool, per destination inside it.
type bucket struct {
	c        *Client
	key      bucketKey
	fc       *fasthttp.Client
	tls      *tls.Config
	roots    []*x509.CertPool // extra roots besides the system's
	loopback bool
	privKey  crypto.PrivateKey // of the client certificate, to tell keys apart
	elem     *list.Element
}

type bucketKey struct {
	cert     [32]byte // SHA-256 of the certificate chain; zero without one
	roots    *x509.CertPool
	loopback bool
}

// New validates p, fills defaults and returns a Client.
func New(p Policy) (*Client, error) {
	c := &Client{
		requireTLS:       p.RequireHTTPS,
		requireAL:        p.RequireAllowedHosts,
		loopbackOK:       p.AllowLoopback,
		extraRoots:       p.ExtraRootCAs,
		resolver:         p.Resolver,
		maxResponseBytes: orDefault(p.MaxResponseBytes, DefaultMaxResponseBytes),
		maxRequestBytes:  orDefault(p.MaxRequestBytes, DefaultMaxRequestBytes),
		defaultTimeout:   orDefault(p.DefaultTimeout, DefaultTimeout),
		maxTimeout:       orDefault(p.MaxTimeout, DefaultMaxTimeout),
		maxConnsPerHost:  orDefault(p.MaxConnsPerHost, DefaultMaxConnsPerHost),
		maxTLSClients:    orDefault(p.MaxTLSClients, DefaultMaxTLSClients),
		buckets:          make(map[bucketKey]*bucket),
	}
	if p.MaxResponseBytes < 0 || p.MaxRequestBytes < 0 || p.DefaultTimeout < 0 || p.MaxTimeout < 0 ||
		p.MaxConnsPerHost < 0 || p.MaxTLSClients < 0 {
		return nil, errors.New("outbound: policy limits must not be negative")
	}
	if c.defaultTimeout > c.maxTimeout {
		return nil, fmt.Errorf("outbound: default timeout %v exceeds max timeout %v", c.defaultTimeout, c.maxTimeout)
	}
	for _, h := range p.AllowedHosts {
		n, err := NormalizeHost(h)
		if err != nil {
			return nil, fmt.Errorf("outbound: allowed host %q: %w", h, err)
		}
		c.allowed = append(c.allowed, n)
	}
	if c.resolver == nil {
		c.resolver = net.DefaultResolver
	}
	for i := range c.dialers {
		c.dialers[i] = net.Dialer{KeepAlive: 30 * time.Second, Control: controlCheck(i == 1)}
	}
	c.base[0] = c.newBucket(bucketKey{}, nil, nil)
	if c.loopbackOK {
		c.base[1] = c.newBucket(bucketKey{loopback: true}, nil, nil)
	}
	return c, nil
}

func orDefault[T int | time.Duration](v, d T) T {
	if v == 0 {
		return d
	}
	return v
}

// neverRetryErr: a forward moves money; fasthttp would otherwise resend
// GET, HEAD and PUT (up to five attempts) after a connection error, and
// whether the destination acted on the first attempt is unknowable.
func neverRetryErr(*fasthttp.Request, int, error) (resetTimeout, retry bool) { return false, false }

// refuseDial is the Client-level dialer: never used, because configureHost
// gives every HostClient its own; if it ever were, it refuses.
func refuseDial(string, time.Duration) (net.Conn, error) { return nil, refused(ruleDialMismatch) }

func (c *Client) newBucket(key bucketKey, cert *tls.Certificate, callRoots *x509.CertPool) *bucket {
	b := &bucket{c: c, key: key, loopback: key.loopback}
	b.tls = certs.BaseTLSConfig()
	b.tls.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	if cert != nil {
		cc := *cert
		b.privKey = cc.PrivateKey
		b.tls.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cc, nil }
	}
	if c.extraRoots != nil {
		b.roots = append(b.roots, c.extraRoots)
	}
	if callRoots != nil {
		b.roots = append(b.roots, callRoots)
	}
	b.fc = &fasthttp.Client{
		NoDefaultUserAgentHeader:  true,
		DialTimeout:               refuseDial,
		MaxConnsPerHost:           c.maxConnsPerHost,
		MaxIdleConnDuration:       idleConnTimeout,
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                neverRetryErr,
		ConnPoolStrategy:          fasthttp.LIFO, // reuse the freshest connection; idle ones expire
		ReadBufferSize:            readBufferSize,
		ReadTimeout:               c.maxTimeout,
		WriteTimeout:              c.maxTimeout,
		MaxResponseBodySize:       c.maxResponseBytes,
		MaxConnWaitTimeout:        c.maxTimeout,
		DisablePathNormalizing:    true,
		ConfigureClient:           b.configureHost,
	}
	primeClient(b.fc)
	return b
}

// primeClient runs fasthttp.Client's lazy initialisation now. Client.Do
// creates its host maps inside a sync.Once but CloseIdleConnections reads
// them without it, a data race when a bucket is dropped (or the Client
// closed) while its first call starts. The priming call is refused by
// configureHost (0.0.0.0 is never allowed), so nothing is dialled and no
// HostClient is kept.
func primeClient(fc *fasthttp.Client) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://0.0.0.0/")
	if err := fc.Do(req, nil); err == nil {
		panic("outbound: priming request was not refused")
	}
}

// configureHost runs once per destination host:port when fasthttp creates
// its HostClient. It checks what fasthttp is about to dial against the
// Client's static rules (a second opinion on Do's checks, on fasthttp's own
// view of the host) and installs a dialer bound to exactly that address.
func (b *bucket) configureHost(hc *fasthttp.HostClient) error {
	hc.SecureErrorLogMessage = true // fasthttp errors must not quote response bytes
	hc.Dial = nil
	hc.DialDualStack = false
	hc.MaxIdemponentCallAttempts = 1
	hc.RetryIfErr = neverRetryErr

	dl := &dialer{b: b, addr: hc.Addr}
	if r := parseAuthority(hc.Addr, hc.IsTLS, &dl.d); r != ruleOK {
		return refused(r)
	}
	if r := b.c.checkStatic(&dl.d, b.loopback); r != ruleOK {
		return refused(r)
	}
	if hc.IsTLS {
		dl.tls = b.hostTLSConfig(dl.d.host)
	}
	hc.DialTimeout = dl.dial
	return nil
}

// checkStatic applies the rules that need no per-call input and no DNS:
// https, Policy.AllowedHosts, names and literal addresses.
func (c *Client) checkStatic(d *destination, loopback bool) rule {
	if c.requireTLS && !d.https {
		return ruleHTTPSRequired
	}
	if len(c.allowed) > 0 && !matchAny(c.allowed, d) {
		return ruleAllowList
	}
	if r := checkName(d, loopback); r != ruleOK {
		return r
	}
	if d.ip.IsValid() {
		return checkAddr(d.ip, loopback)
	}
	return ruleOK
}

func matchAny(entries []string, d *destination) bool {
	for _, e := range entries {
		if matchEntry(e, d) {
			return true
		}
	}
	return false
}

// checkDestination applies every rule that needs no DNS and reports
// whether loopback addresses may be reached: only with
// Policy.AllowLoopback and when an allow-list explicitly names the host.
func (c *Client) checkDestination(d *destination, opts *CallOptions) (rule, bool) {
	if c.requireTLS && !d.https {
		return ruleHTTPSRequired, false
	}
	listed := false
	if len(c.allowed) > 0 {
		if !matchAny(c.allowed, d) {
			return ruleAllowList, false
		}
		listed = true
	}
	if len(opts.AllowedHosts) > 0 {
		if !matchAny(opts.AllowedHosts, d) {
			return ruleAllowList, false
		}
		listed = true
	}
	if c.requireAL && !listed {
		return ruleAllowListRequired, false
	}
	loopback := c.loopbackOK && listed
	return c.checkStatic(d, loopback), loopback
}

// CheckURL validates a destination URL as Do would, without sending
// anything and without DNS: the URL form, https, the allow-lists, the name
// rules and a literal address. Call it before detokenizing so a refused
// destination costs no card data. It parses rawURL with both net/url and
// fasthttp and refuses it if they disagree on the scheme or the host.
// Resolved addresses are checked only when Do connects.
func (c *Client) CheckURL(rawURL string, opts CallOptions) error {
	// A pooled URI: its buffers are reused, where a fresh one allocates
	// for the parse and again for the request target checkURI builds.
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	// Parse only reads its input, copying what it keeps into u's buffers,
	// so it is given a view of rawURL rather than a copy.
	if err := u.Parse(nil, unsafe.Slice(unsafe.StringData(rawURL), len(rawURL))); err != nil {
		return refused(ruleURLMalformed)
	}
	d, _, err := c.checkURI(u, &opts)
	if err != nil {
		return err
	}
	if r := crossCheck(rawURL, &d); r != ruleOK {
		return refused(r)
	}
	return nil
}

// checkURI validates fasthttp's parsed view of the destination, the one it
// will connect to and write into the request line and Host header. The
// destination's host is a view of u's host buffer, not a copy: it is valid
// only until u changes, which is all CheckURL needs; Do copies it.
func (c *Client) checkURI(u *fasthttp.URI, opts *CallOptions) (destination, bool, error) {
	var d destination
	if len(u.Username()) > 0 || len(u.Password()) > 0 {
		return d, false, refused(ruleURLUserinfo)
	}
	https, r := parseScheme(string(u.Scheme()))
	if r != ruleOK {
		return d, false, refused(r)
	}
	host := u.Host()
	if r := parseAuthority(unsafe.String(unsafe.SliceData(host), len(host)), https, &d); r != ruleOK {
		return d, false, refused(r)
	}
	u.DisablePathNormalizing = true
	if len(u.PathOriginal()) == 0 { // "https://host?x=1"
		u.SetPath("/")
	}
	if r := checkTarget(u.RequestURI()); r != ruleOK {
		return d, false, refused(r)
	}
	r, loopback := c.checkDestination(&d, opts)
	if r != ruleOK {
		return d, false, refused(r)
	}
	return d, loopback, nil
}

// CheckTarget refuses a request target (a path and its query, as written
// into the request line) as Do refuses a URL's: one that is not
// origin-form or holds a control byte, a space or a non-ASCII byte, all of
// which must be percent-encoded. It is for code that writes request lines
// to destinations Do does not reach (the forward engine, for every
// caller). The error is an *Error with CodeInvalidURL.
func CheckTarget(target string) error {
	if r := checkTarget(target); r != ruleOK {
		return refused(r)
	}
	return nil
}

// checkTarget refuses a request target that is not origin-form or holds
// bytes that would break the request line (controls, spaces, non-ASCII).
func checkTarget[T ~string | ~[]byte](rt T) rule {
	if len(rt) == 0 || rt[0] != '/' {
		return ruleURLTarget
	}
	for i := range len(rt) {
		if ch := rt[i]; ch <= ' ' || ch >= 0x7f {
			return ruleURLTarget
		}
	}
	return ruleOK
}

// Do sends req to the destination named by its URI (set it with
// req.SetRequestURI(absoluteURL)) and reads the answer into resp.
//
// Before anything is sent the URL, the policy, the call's allow-list, the
// destination name and a literal address are checked; the request body
// size too. On a new connection the dialer resolves the name once, refuses
// it if any answer is forbidden and connects to the checked addresses.
// The request is sent at most once: no retries, not even of idempotent
// methods, and redirects are returned as they are, never followed.
//
// Do rewrites req's URI host to its canonical form and sets the Host header
// from it (req.UseHostHeader is cleared). The deadline is the earlier of
// opts.Timeout and ctx's deadline; cancelling ctx stops a call that has not
// started sending, but not one in flight (fasthttp has no cancellation).
// Every error is an *Error.
func (c *Client) Do(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response, opts CallOptions) error {
	if req == nil {
		return newError(CodeFailed, ErrFailed.Message, ruleOK, errors.New("nil request"))
	}
	u := req.URI()
	d, loopback, err := c.checkURI(u, &opts)
	if err != nil {
		return err
	}
	d.host = strings.Clone(d.host) // a view of u's host, which SetHost below overwrites
	if auth := string(u.Host()); !d.sameAuthority(auth) {
		u.SetHost(d.authority())
	}
	if d.https {
		u.SetScheme("https")
	} else {
		u.SetScheme("http")
	}
	req.UseHostHeader = false

	if req.IsBodyStream() {
		return refused(ruleURLBodyStream)
	}
	if len(req.Body()) > c.maxRequestBytes {
		return newError(CodeRequestTooLarge, ErrRequestTooLarge.Message, ruleOK, nil)
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = c.defaultTimeout
	}
	if timeout > c.maxTimeout {
		timeout = c.maxTimeout
	}
	deadline := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(deadline) {
		deadline = cd
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return newError(CodeTimeout, ErrTimeout.Message, ruleOK, err)
		}
		return newError(CodeFailed, "request was cancelled before it was sent", ruleOK, err)
	}

	b, err := c.bucketFor(&opts, loopback)
	if err != nil {
		return err
	}
	if resp == nil {
		resp = fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
	}
	// Do, never DoRedirects: a 3xx is the caller's answer, its Location is
	// never fetched.
	if err := b.fc.DoDeadline(req, resp, deadline); err != nil {
		e := classify(err)
		if e.Err == err && e.Message == msgClosedNoResponse { // not one of ours: fasthttp's "closed"
			if tlsErr := tlsReadError(resp.RemoteAddr()); tlsErr != nil {
				return newError(CodeTLSFailed, ErrTLSFailed.Message, ruleOK, errors.Join(tlsErr, err))
			}
		}
		return e
	}
	return nil
}

// sameAuthority reports whether hp already is d's canonical authority, so
// Do rewrites (and allocates) only when it differs.
func (d *destination) sameAuthority(hp string) bool {
	host, port := hp, ""
	if hp != "" && hp[0] == '[' {
		end := -1
		for i := 0; i < len(hp); i++ {
			if hp[i] == ']' {
				end = i
				break
			}
		}
		if end < 0 {
			return false
		}
		host, port = hp[1:end], hp[end+1:]
	} else {
		for i := len(hp) - 1; i >= 0; i-- {
			if hp[i] == ':' {
				host, port = hp[:i], hp[i:]
				break
			}
		}
	}
	if host != d.host {
		return false
	}
	if !d.explicitPort {
		return port == ""
	}
	var buf [6]byte
	return port == string(strconv.AppendUint(append(buf[:0], ':'), uint64(d.port), 10))
}

// bucketFor returns the fasthttp.Client for the call's client identity.
func (c *Client) bucketFor(opts *CallOptions, loopback bool) (*bucket, error) {
	li := 0
	if loopback {
		li = 1
	}
	cert := opts.ClientCertificate
	if c.closed.Load() {
		return nil, errClientClosed()
	}
	if cert == nil && opts.ExtraRootCAs == nil {
		return c.base[li], nil
	}
	key := bucketKey{roots: opts.ExtraRootCAs, loopback: loopback}
	if cert != nil {
		if len(cert.Certificate) == 0 || cert.PrivateKey == nil {
			return nil, newError(CodeTLSFailed, "client certificate or its key is missing", ruleOK, nil)
		}
		key.cert = chainFingerprint(cert.Certificate)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buckets[key]
	if b == nil && key.roots != nil {
		// The same roots in another pool object (the caller parsed the
		// method's ca_certificate again) share the cached client.
		for k, cand := range c.buckets {
			if k.cert == key.cert && k.loopback == key.loopback && k.roots != nil && k.roots.Equal(key.roots) {
				b = cand
				break
			}
		}
	}
	if b != nil && (cert == nil || privateKeysEqual(b.privKey, cert.PrivateKey)) {
		c.lru.MoveToFront(b.elem)
		return b, nil
	}
	if cert != nil {
		if err := keyMatchesLeaf(cert); err != nil {
			return nil, newError(CodeTLSFailed, "client certificate and key do not match", ruleOK, err)
		}
	}
	if b != nil { // same certificate, a different (matching) key object without Equal
		c.dropLocked(b)
	}
	b = c.newBucket(key, cert, opts.ExtraRootCAs)
	c.buckets[key] = b
	b.elem = c.lru.PushFront(b)
	for c.lru.Len() > c.maxTLSClients {
		c.dropLocked(c.lru.Back().Value.(*bucket))
	}
	return b, nil
}

func (c *Client) dropLocked(b *bucket) {
	c.lru.Remove(b.elem)
	if c.buckets[b.key] == b {
		delete(c.buckets, b.key)
	}
	// Calls in flight finish on their connections; idle ones close now and
	// the rest when they go idle.
	b.fc.CloseIdleConnections()
}

func errClientClosed() *Error {
	return newError(CodeFailed, ErrFailed.Message, ruleOK, errors.New("outbound client is closed"))
}

// Close closes idle connections; later calls fail. Calls in flight finish.
func (c *Client) Close() error {
	c.closed.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.base {
		if b != nil {
			b.fc.CloseIdleConnections()
		}
	}
	for _, b := range c.buckets {
		b.fc.CloseIdleConnections()
	}
	return nil
}

func chainFingerprint(chain [][]byte) [32]byte {
	h := sha256.New()
	var n [4]byte
	for _, der := range chain {
		binary.BigEndian.PutUint32(n[:], uint32(len(der)))
		h.Write(n[:])
		h.Write(der)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

func privateKeysEqual(a, b crypto.PrivateKey) bool {
	if eq, ok := a.(interface{ Equal(crypto.PrivateKey) bool }); ok {
		return eq.Equal(b)
	}
	return false
}

// keyMatchesLeaf checks that the certificate's private key belongs to its
// leaf, so a cached client (keyed by certificate) is never handed to a call
// carrying the same public certificate with another key.
func keyMatchesLeaf(cert *tls.Certificate) error {
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return err
		}
	}
	signer, ok := cert.PrivateKey.(crypto.Signer)
	if !ok {
		return errors.New("private key is not a crypto.Signer")
	}
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return errors.New("private key does not match the certificate")
	}
	return nil
}
