// Package webhookhttp sends outbound webhooks over HTTP: the adapter the
// webhooks Dispatcher delivers through, with vault forward's destination
// rules (shared/netguard) applied at every connect.
package webhookhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/netguard"
)

var _ webhooks.Sender = (*Sender)(nil)

// Sender posts webhooks through Client.
type Sender struct{ Client *http.Client }

// New is a Sender through NewClient.
func New(allowLoopback bool, timeout time.Duration) *Sender {
	return &Sender{Client: NewClient(allowLoopback, timeout)}
}

// maxResponseRead is how much more of a long answer is read (and
// dropped) so the connection can be reused.
const maxResponseRead = 64 << 10

// Send posts m; ctx bounds it (the attempt's timeout).
func (s *Sender) Send(ctx context.Context, m webhooks.Message) webhooks.Answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return webhooks.Answer{Error: "invalid url"}
	}
	req.Header = http.Header(m.Header())
	if m.Username != "" {
		req.SetBasicAuth(m.Username, m.Password)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return webhooks.Answer{Error: attemptError(err)}
	}
	defer resp.Body.Close()
	a := webhooks.Answer{Code: resp.StatusCode, Header: resp.Header}
	// Bounded, and within ctx: a huge or endless body costs this buffer
	// and the attempt's timeout at most.
	a.Body, err = io.ReadAll(io.LimitReader(resp.Body, webhooks.MaxBodyRead))
	a.BodyCut = err != nil || len(a.Body) == webhooks.MaxBodyRead
	if err == nil && a.BodyCut {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	}
	return a
}

// RefusedError is a destination the address rules refuse (netguard): the
// attempt fails without a request sent. Its text names the rule, never
// the address.
type RefusedError struct{ Verdict netguard.Verdict }

func (e *RefusedError) Error() string { return "destination refused: " + e.Verdict.String() }

// NewClient is the HTTP client deliveries go through, with vault
// forward's destination rules: the host name judged before DNS
// (netguard.CheckName), every address judged on the exact socket being
// connected, after DNS (netguard.CheckAddr in the dialer's Control, so a
// name that resolves differently the second time cannot slip through),
// redirects never followed, and each request bounded by timeout.
// allowLoopback admits loopback addresses (127.0.0.0/8, ::1) and the name
// localhost: for an instance whose tests deliver to a local receiver
// (WEBHOOK_ALLOW_LOOPBACK), never in production.
func NewClient(allowLoopback bool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: controlCheck(allowLoopback)}
	transport := &http.Transport{
		Proxy: nil, // a proxy would connect on our behalf, past the rules
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, &RefusedError{netguard.AddrInvalid}
			}
			if _, err := netip.ParseAddr(host); err != nil {
				if v := netguard.CheckName(strings.ToLower(strings.TrimSuffix(host, ".")), allowLoopback); v != netguard.Allowed {
					return nil, &RefusedError{v}
				}
			}
			return dialer.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

func controlCheck(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedError{netguard.AddrInvalid}
		}
		if v := netguard.CheckAddr(ap.Addr(), allowLoopback); v != netguard.Allowed {
			return &RefusedError{v}
		}
		return nil
	}
}

// attemptError is the stable text recorded for an attempt that got no
// answer: never an address or a URL.
func attemptError(err error) string {
	var re *RefusedError
	var ne net.Error
	switch {
	case errors.As(err, &re):
		return re.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	default:
		var de *net.DNSError
		if errors.As(err, &de) {
			return "name not resolved"
		}
		return "connection failed"
	}
}
