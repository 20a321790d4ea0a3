package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/payorch/shared/netguard"
)

// dialer is installed on one fasthttp.HostClient (one destination
// host:port, one client identity). fasthttp calls dial for every new
// connection; kept-alive connections are reused without it, which is safe
// because each was checked when it was made.
type dialer struct {
	b    *bucket
	addr string // the HostClient's Addr; fasthttp dials nothing else
	d    destination
	tls  *tls.Config // nil for http
}

// minPartialDial is the least time one address gets when a name resolves
// to several and the first ones do not answer (as in net.Dialer).
const minPartialDial = 2 * time.Second

// dial resolves the destination once, refuses the whole destination if any
// answer is in a forbidden range, then connects to those checked IP
// addresses, never to the name, so there is no window for DNS rebinding
// between the check and the connect. For https it runs the TLS handshake
// itself, bounded by the same deadline.
func (dl *dialer) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if addr != dl.addr {
		return nil, refused(ruleDialMismatch)
	}
	c := dl.b.c
	if timeout <= 0 || timeout > c.maxTimeout {
		timeout = c.maxTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	var (
		one [1]netip.Addr
		ips []netip.Addr
	)
	if dl.d.ip.IsValid() {
		one[0] = dl.d.ip
		ips = one[:]
	} else {
		var err error
		ips, err = c.resolver.LookupNetIP(ctx, "ip", dl.d.host)
		if err != nil {
			if ctx.Err() != nil || isTimeout(err) {
				return nil, newError(CodeTimeout, ErrTimeout.Message, ruleOK, err)
			}
			return nil, newError(CodeFailed, msgResolveFailed, ruleOK, err)
		}
		if len(ips) == 0 {
			return nil, newError(CodeFailed, msgResolveFailed, ruleOK, nil)
		}
	}
	// Every answer must pass: one bad address refuses the destination, even
	// if a good one comes first.
	for _, ip := range ips {
		if r := checkAddr(ip, dl.b.loopback); r != ruleOK {
			return nil, refused(r)
		}
	}
	conn, err := dl.connect(ctx, ips)
	if err != nil {
		return nil, err
	}
	if dl.tls == nil {
		return conn, nil
	}
	tc := tls.Client(conn, dl.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		if ctx.Err() != nil || isTimeout(err) {
			return nil, newError(CodeTimeout, ErrTimeout.Message, ruleOK, err)
		}
		return nil, newError(CodeTLSFailed, ErrTLSFailed.Message, ruleOK, err)
	}
	// fasthttp sees a conn with Handshake() and does not wrap it again.
	return newTLSConn(tc), nil
}

// tlsConn records the first TLS error a read returns. In TLS 1.3 a server
// refuses a client certificate after the client has finished its side of
// the handshake: the alert arrives on the first read, and fasthttp reports
// any error on a response's first byte as a closed connection. Do finds
// the recorded alert through resp.RemoteAddr() (fasthttp stores the conn's
// RemoteAddr in the response before writing the request) and reports
// CodeTLSFailed instead of "closed without a response".
type tlsConn struct {
	*tls.Conn // keeps Handshake(), so fasthttp does not wrap the conn again
	addr      *connAddr
	readErr   atomic.Pointer[error]
}

// connAddr is the conn's remote address with a way back to the conn.
type connAddr struct {
	net.Addr
	c *tlsConn
}

func newTLSConn(tc *tls.Conn) *tlsConn {
	c := &tlsConn{Conn: tc}
	c.addr = &connAddr{Addr: tc.RemoteAddr(), c: c}
	return c
}

func (c *tlsConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && isTLSError(err) {
		c.readErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (c *tlsConn) RemoteAddr() net.Addr { return c.addr }

// tlsReadError returns the TLS error recorded on the connection a response
// was read from, if any.
func tlsReadError(remote net.Addr) error {
	if a, ok := remote.(*connAddr); ok {
		if p := a.c.readErr.Load(); p != nil {
			return *p
		}
	}
	return nil
}

func (dl *dialer) connect(ctx context.Context, ips []netip.Addr) (net.Conn, error) {
	var first error
	for i, ip := range ips {
		actx := ctx
		if left := len(ips) - i; left > 1 {
			if dead, ok := ctx.Deadline(); ok {
				part := time.Until(dead) / time.Duration(left)
				if part < minPartialDial {
					part = minPartialDial
				}
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(ctx, part)
				defer cancel()
			}
		}
		conn, err := dl.b.c.netDial(actx, netip.AddrPortFrom(ip.Unmap(), dl.d.port).String(), dl.b.loopback)
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		var oe *Error
		if errors.As(err, &oe) || ctx.Err() != nil {
			break
		}
	}
	var oe *Error
	switch {
	case errors.As(first, &oe):
		return nil, oe
	case ctx.Err() != nil || isTimeout(first):
		return nil, newError(CodeTimeout, ErrTimeout.Message, ruleOK, first)
	case errors.Is(first, syscall.ECONNREFUSED):
		return nil, newError(CodeConnectionRefused, ErrConnectionRefused.Message, ruleOK, first)
	}
	return nil, newError(CodeFailed, ErrFailed.Message, ruleOK, first)
}

// netDial connects to an "ip:port". The default net.Dialer checks the
// address once more in Control, on the exact sockaddr being connected.
func (c *Client) netDial(ctx context.Context, addr string, loopback bool) (net.Conn, error) {
	if c.testDial != nil {
		return c.testDial(ctx, "tcp", addr)
	}
	if loopback {
		return c.dialers[1].DialContext(ctx, "tcp", addr)
	}
	return c.dialers[0].DialContext(ctx, "tcp", addr)
}

func controlCheck(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return refused(guardRule(netguard.AddrInvalid))
		}
		if r := checkAddr(ap.Addr(), allowLoopback); r != ruleOK {
			return refused(r)
		}
		return nil
	}
}

// hostTLSConfig is the TLS configuration of connections to one host: the
// bucket's (policy, client certificate) with the server name set. With
// extra roots, verification moves to VerifyConnection, which tries the
// system roots and then each extra pool (a CertPool cannot be merged into
// another); it still checks the chain, validity, key usage and host name,
// and runs on resumed sessions too.
func (b *bucket) hostTLSConfig(host string) *tls.Config {
	cfg := b.tls.Clone()
	cfg.ServerName = host
	if len(b.roots) > 0 {
		roots := b.roots
		cfg.InsecureSkipVerify = true // verified below, never skipped
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, host, roots)
		}
	}
	return cfg
}

func verifyChain(chain []*x509.Certificate, host string, pools []*x509.CertPool) error {
	if len(chain) == 0 {
		return errors.New("outbound: destination sent no certificate")
	}
	opts := x509.VerifyOptions{DNSName: host, Intermediates: x509.NewCertPool()}
	for _, ic := range chain[1:] {
		opts.Intermediates.AddCert(ic)
	}
	_, err := chain[0].Verify(opts) // Roots nil: the system roots
	if err == nil {
		return nil
	}
	for _, p := range pools {
		opts.Roots = p
		if _, e := chain[0].Verify(opts); e == nil {
			return nil
		}
	}
	return &tls.CertificateVerificationError{UnverifiedCertificates: chain, Err: err}
}
