package outbound

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/payorch/shared/netguard"
	"github.com/valyala/fasthttp"
)

// TestHostileDestinations proves each hostile destination is refused before
// a byte is sent. Every dial the client could make lands on a loopback
// canary (catchAll) and every name resolves through a stub, so a check that
// let one through would show up as a dial and an accepted connection.
func TestHostileDestinations(t *testing.T) {
	canary := startServer(t, nil, nil)
	P := canary.port

	res := newStubResolver()
	res.set("evil.example", "127.0.0.1")
	res.set("zero.example", "0.0.0.0")
	res.set("mixed.example", "93.184.216.34", "10.0.0.1")
	res.set("mapped.example", "::ffff:169.254.169.254")
	res.set("metadata.google.internal", "127.0.0.1")
	res.set("public.example", "93.184.216.34")
	res.set("api.processor.example", "93.184.216.34")
	res.set("localhost", "127.0.0.1")
	res.set("vault", "127.0.0.1")
	res.set("kubernetes.default.svc", "127.0.0.1")
	res.set("nat64.example", "64:ff9b::a00:1")

	type tc struct {
		name   string
		url    string
		policy Policy
		opts   CallOptions
		code   string
		static bool // refused by CheckURL too (no DNS needed)
	}
	u := func(format string) string { return strings.ReplaceAll(format, "{P}", fmt.Sprint(P)) }
	loopbackListed := func(hosts ...string) Policy {
		return Policy{AllowLoopback: true, AllowedHosts: hosts}
	}
	cases := []tc{
		// Non-canonical IPv4 forms of 127.0.0.1.
		{name: "decimal", url: u("http://2130706433:{P}/"), code: CodeInvalidURL, static: true},
		{name: "octal", url: u("http://0177.0.0.1:{P}/"), code: CodeInvalidURL, static: true},
		{name: "hex", url: u("http://0x7f.1:{P}/"), code: CodeInvalidURL, static: true},
		{name: "hex whole", url: u("http://0x7f000001:{P}/"), code: CodeInvalidURL, static: true},
		{name: "short", url: u("http://127.1:{P}/"), code: CodeInvalidURL, static: true},
		{name: "percent encoded dots", url: u("http://127%2e0%2e0%2e1:{P}/"), code: CodeInvalidURL, static: true},
		{name: "fullwidth digits", url: "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", code: CodeInvalidURL, static: true},
		// Loopback, literal.
		{name: "loopback v4", url: u("http://127.0.0.1:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "loopback v4 other", url: u("http://127.0.0.2:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "v4-mapped loopback", url: u("http://[::ffff:127.0.0.1]:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "loopback v6", url: u("http://[::1]:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "localhost", url: u("http://localhost:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "localhost trailing dot", url: u("http://localhost.:{P}/"), code: CodeHostNotAllowed, static: true},
		// Metadata and private ranges.
		{name: "aws metadata", url: "http://169.254.169.254/latest/meta-data", code: CodeHostNotAllowed, static: true},
		{name: "mapped metadata", url: "http://[::ffff:169.254.169.254]/", code: CodeHostNotAllowed, static: true},
		{name: "gcp metadata name", url: "http://metadata.google.internal/", code: CodeHostNotAllowed, static: true},
		{name: "cgnat", url: "http://100.64.0.1/", code: CodeHostNotAllowed, static: true},
		{name: "rfc1918 10", url: "http://10.0.0.1/", code: CodeHostNotAllowed, static: true},
		{name: "rfc1918 192.168", url: "http://192.168.1.1/", code: CodeHostNotAllowed, static: true},
		{name: "rfc1918 172.16", url: "http://172.16.0.1/", code: CodeHostNotAllowed, static: true},
		{name: "this host", url: u("http://0.0.0.0:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "unspecified v6", url: u("http://[::]:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "multicast", url: "http://224.0.0.1/", code: CodeHostNotAllowed, static: true},
		{name: "broadcast", url: "http://255.255.255.255/", code: CodeHostNotAllowed, static: true},
		{name: "reserved 240/4", url: "http://240.0.0.1/", code: CodeHostNotAllowed, static: true},
		{name: "benchmarking", url: "http://198.18.0.1/", code: CodeHostNotAllowed, static: true},
		{name: "documentation", url: "http://192.0.2.1/", code: CodeHostNotAllowed, static: true},
		{name: "link-local v6", url: "http://[fe80::1]/", code: CodeHostNotAllowed, static: true},
		{name: "ula v6", url: "http://[fc00::1]/", code: CodeHostNotAllowed, static: true},
		{name: "nat64 loopback", url: "http://[64:ff9b::7f00:1]/", code: CodeHostNotAllowed, static: true},
		{name: "6to4 loopback", url: "http://[2002:7f00:1::]/", code: CodeHostNotAllowed, static: true},
		{name: "teredo", url: "http://[2001::1]/", code: CodeHostNotAllowed, static: true},
		{name: "v4-compatible", url: "http://[::127.0.0.1]/", code: CodeHostNotAllowed, static: true},
		{name: "zone id", url: "http://[fe80::1%25eth0]/", code: CodeInvalidURL, static: true},
		// Names.
		{name: "single label", url: u("http://vault:{P}/"), code: CodeHostNotAllowed, static: true},
		{name: "k8s service", url: "http://kubernetes.default.svc/", code: CodeHostNotAllowed, static: true},
		// Resolved at connect time.
		{name: "name to loopback", url: u("http://evil.example:{P}/"), code: CodeHostNotAllowed},
		{name: "upper-case name to loopback", url: u("http://EVIL.EXAMPLE:{P}/"), code: CodeHostNotAllowed},
		{name: "trailing-dot name to loopback", url: u("http://evil.example.:{P}/"), code: CodeHostNotAllowed},
		{name: "name to public and private", url: u("http://mixed.example:{P}/"), code: CodeHostNotAllowed},
		{name: "name to mapped metadata", url: u("http://mapped.example:{P}/"), code: CodeHostNotAllowed},
		{name: "name to nat64 private", url: u("http://nat64.example:{P}/"), code: CodeHostNotAllowed},
		{name: "unresolvable", url: u("http://nowhere.example:{P}/"), code: CodeFailed},
		// URL forms.
		{name: "userinfo", url: u("https://allowed.example@127.0.0.1:{P}/"), code: CodeInvalidURL, static: true},
		{name: "userinfo with password", url: u("http://a:b@evil.example:{P}/"), code: CodeInvalidURL, static: true},
		{name: "ftp", url: "ftp://x/", code: CodeInvalidURL, static: true},
		{name: "file", url: "file:///etc/passwd", code: CodeInvalidURL, static: true},
		{name: "gopher", url: u("gopher://evil.example:{P}/"), code: CodeInvalidURL, static: true},
		{name: "port 0", url: "http://evil.example:0/", code: CodeInvalidURL, static: true},
		{name: "port 99999", url: "http://evil.example:99999/", code: CodeInvalidURL, static: true},
		{name: "empty host", url: "http:///x", code: CodeInvalidURL, static: true},
		{name: "space in host", url: "http://a b/", code: CodeInvalidURL, static: true},
		// Policy.
		{name: "not in policy allow-list", url: "http://public.example/", policy: Policy{AllowedHosts: []string{"api.processor.example"}}, code: CodeHostNotAllowed, static: true},
		{name: "not in call allow-list", url: "http://public.example/", opts: CallOptions{AllowedHosts: []string{"api.processor.example"}}, code: CodeHostNotAllowed, static: true},
		{name: "allow-list entry on other port", url: "https://api.processor.example:8443/", opts: CallOptions{AllowedHosts: []string{"api.processor.example"}}, code: CodeHostNotAllowed, static: true},
		{name: "http when https required", url: "http://api.processor.example/", policy: Policy{RequireHTTPS: true}, code: CodeHostNotAllowed, static: true},
		{name: "allow-list required but none", url: "https://api.processor.example/", policy: Policy{RequireAllowedHosts: true}, code: CodeHostNotAllowed, static: true},
		// AllowLoopback admits only listed loopback, and only loopback.
		{name: "loopback allowed but not listed", url: u("http://127.0.0.1:{P}/"), policy: Policy{AllowLoopback: true}, code: CodeHostNotAllowed, static: true},
		{name: "loopback allowed, listed 0.0.0.0", url: u("http://0.0.0.0:{P}/"), policy: loopbackListed(u("0.0.0.0:{P}")), code: CodeHostNotAllowed, static: true},
		{name: "loopback allowed, listed [::]", url: u("http://[::]:{P}/"), policy: loopbackListed(u("[::]:{P}")), code: CodeHostNotAllowed, static: true},
		{name: "loopback allowed, listed nat64 loopback", url: u("http://[64:ff9b::7f00:1]:{P}/"), policy: loopbackListed(u("[64:ff9b::7f00:1]:{P}")), code: CodeHostNotAllowed, static: true},
		{name: "loopback allowed, listed name to 0.0.0.0", url: u("http://zero.example:{P}/"), policy: loopbackListed(u("zero.example:{P}")), code: CodeHostNotAllowed},
		{name: "loopback allowed, listed 10/8", url: "http://10.0.0.1/", policy: loopbackListed("10.0.0.1"), code: CodeHostNotAllowed, static: true},
		{name: "loopback allowed, listed metadata", url: "http://169.254.169.254/", opts: CallOptions{AllowedHosts: []string{"169.254.169.254"}}, policy: Policy{AllowLoopback: true}, code: CodeHostNotAllowed, static: true},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			before := canary.accepts()
			p := tt.policy
			p.Resolver = res
			c := mustNew(t, p)
			ca := &catchAll{target: canary.addr}
			c.testDial = ca.dial

			_, _, err := do(t, c, "PUT", tt.url, []byte(`{"number":"4111111111111111"}`), tt.opts)
			e := wantCode(t, err, tt.code)
			if strings.Contains(e.Error(), "4111") {
				t.Errorf("error mentions the request body: %v", e)
			}
			if got := ca.addrs(); len(got) != 0 {
				t.Errorf("dialled %v", got)
			}
			if got := canary.accepts() - before; got != 0 {
				t.Errorf("canary saw %d connections", got)
			}
			if e.Code == CodeHostNotAllowed || e.Code == CodeInvalidURL {
				if e.Rule == "" {
					t.Errorf("no rule recorded: %v", e)
				}
				if strings.Contains(e.Message, "127.0.0.1") || strings.Contains(e.Message, "10.0.0.1") {
					t.Errorf("message reveals an address: %q", e.Message)
				}
			}
			cerr := c.CheckURL(tt.url, tt.opts)
			if tt.static {
				wantCode(t, cerr, tt.code)
			}
		})
	}

	// Positive controls: the same harness does see what is allowed, so the
	// zero counts above mean something.
	t.Run("positive control literal", func(t *testing.T) {
		before := canary.accepts()
		c := mustNew(t, Policy{AllowLoopback: true, AllowedHosts: []string{hostPort(P)}, Resolver: res})
		ca := &catchAll{target: canary.addr}
		c.testDial = ca.dial
		status, body, err := do(t, c, "GET", u("http://127.0.0.1:{P}/"), nil, CallOptions{})
		if err != nil || status != 200 || string(body) != "ok" {
			t.Fatalf("status %d body %q err %v", status, body, err)
		}
		if got := ca.addrs(); len(got) != 1 || got[0] != hostPort(P) {
			t.Errorf("dialled %v", got)
		}
		if got := canary.accepts() - before; got != 1 {
			t.Errorf("canary saw %d connections, want 1", got)
		}
	})
	t.Run("positive control name via call allow-list", func(t *testing.T) {
		before := canary.accepts()
		c := mustNew(t, Policy{AllowLoopback: true, Resolver: res})
		ca := &catchAll{target: canary.addr}
		c.testDial = ca.dial
		status, _, err := do(t, c, "GET", u("http://evil.example:{P}/"), nil, CallOptions{AllowedHosts: []string{u("Evil.Example.:{P}")}})
		if err != nil || status != 200 {
			t.Fatalf("status %d err %v", status, err)
		}
		// The checked address is dialled, never the name.
		if got := ca.addrs(); len(got) != 1 || got[0] != hostPort(P) {
			t.Errorf("dialled %v", got)
		}
		if got := canary.accepts() - before; got != 1 {
			t.Errorf("canary saw %d connections, want 1", got)
		}
	})
	// The one control with the resolver production uses (Policy.Resolver
	// nil: the system's): a name is looked up, the address checked and
	// dialled. Its precondition, that the machine maps localhost to
	// 127.0.0.1 (/etc/hosts), is checked first, so that a machine without
	// it fails here naming the cause: a control that skips proves nothing.
	t.Run("positive control listed localhost, system resolver", func(t *testing.T) {
		addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost")
		if err != nil || !slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Unmap() == netip.MustParseAddr("127.0.0.1") }) {
			t.Fatalf("this machine does not resolve localhost to 127.0.0.1 (%v, err %v); the control needs it", addrs, err)
		}
		before := canary.accepts()
		c := mustNew(t, Policy{AllowLoopback: true})
		status, _, err := do(t, c, "GET", u("http://localhost:{P}/"), nil, CallOptions{AllowedHosts: []string{u("localhost:{P}")}})
		if err != nil || status != 200 {
			t.Fatalf("status %d err %v", status, err)
		}
		if got := canary.accepts() - before; got != 1 {
			t.Errorf("canary saw %d connections, want 1", got)
		}
	})
	t.Run("positive control real network", func(t *testing.T) {
		before := canary.accepts()
		c := mustNew(t, Policy{AllowLoopback: true, AllowedHosts: []string{hostPort(P)}})
		status, _, err := do(t, c, "GET", u("http://127.0.0.1:{P}/"), nil, CallOptions{})
		if err != nil || status != 200 {
			t.Fatalf("status %d err %v", status, err)
		}
		if got := canary.accepts() - before; got != 1 {
			t.Errorf("canary saw %d connections, want 1", got)
		}
	})
}

// TestDNSRebinding: the name answers a public address first and loopback
// afterwards. The first connection goes to the checked public address; the
// next connection resolves again at connect time and is refused.
func TestDNSRebinding(t *testing.T) {
	canary := startServer(t, nil, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close") // force a new connection per request
		_, _ = w.Write([]byte("ok"))
	})
	res := newStubResolver()
	res.setFunc("rebind.example", func(n int) []netip.Addr {
		if n == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	})
	c := mustNew(t, Policy{Resolver: res})
	ca := &catchAll{target: canary.addr}
	c.testDial = ca.dial
	url := fmt.Sprintf("http://rebind.example:%d/", canary.port)

	status, _, err := do(t, c, "POST", url, []byte("x"), CallOptions{})
	if err != nil || status != 200 {
		t.Fatalf("first call: status %d err %v", status, err)
	}
	if got := ca.addrs(); len(got) != 1 || got[0] != fmt.Sprintf("93.184.216.34:%d", canary.port) {
		t.Fatalf("first call dialled %v, want the checked public address", got)
	}
	acceptsAfterFirst := canary.accepts()

	_, _, err = do(t, c, "POST", url, []byte("x"), CallOptions{})
	e := wantCode(t, err, CodeHostNotAllowed)
	if e.Rule != netguard.AddrLoopback.String() {
		t.Errorf("rule %q, want %q", e.Rule, netguard.AddrLoopback)
	}
	if got := ca.addrs(); len(got) != 1 {
		t.Errorf("rebound call dialled %v", got[1:])
	}
	if got := canary.accepts(); got != acceptsAfterFirst {
		t.Errorf("canary saw %d more connections", got-acceptsAfterFirst)
	}
	if got := res.count("rebind.example"); got != 2 {
		t.Errorf("resolver asked %d times, want once per connection (2)", got)
	}
}

// TestControlRechecksSocketAddress: the default net.Dialer refuses a
// forbidden address at the socket level, whatever got it there.
func TestControlRechecksSocketAddress(t *testing.T) {
	for _, tt := range []struct {
		addr     string
		loopback bool
		ok       bool
	}{
		{"127.0.0.1:80", false, false},
		{"127.0.0.1:80", true, true},
		{"[::1]:80", true, true},
		{"0.0.0.0:80", true, false},
		{"10.1.2.3:443", true, false},
		{"[::ffff:10.1.2.3]:443", false, false},
		{"93.184.216.34:443", false, true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", false, true},
		{"not-an-address", false, false},
	} {
		err := controlCheck(tt.loopback)("tcp", tt.addr, nil)
		if (err == nil) != tt.ok {
			t.Errorf("control(%s, loopback=%v) = %v, want ok=%v", tt.addr, tt.loopback, err, tt.ok)
		}
	}
}

// TestRequestNeverReachesFasthttpUnchecked: even a request whose URI was
// built piecemeal (Host header, no scheme) is judged on what fasthttp
// would use.
func TestRequestHostHeaderOnly(t *testing.T) {
	canary := startServer(t, nil, nil)
	c := mustNew(t, Policy{})
	ca := &catchAll{target: canary.addr}
	c.testDial = ca.dial
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetHost("127.0.0.1")
	req.SetRequestURI("/admin")
	err := c.Do(context.Background(), req, nil, CallOptions{})
	wantCode(t, err, CodeHostNotAllowed)
	if len(ca.addrs()) != 0 || canary.accepts() != 0 {
		t.Fatal("request reached the network")
	}
}
