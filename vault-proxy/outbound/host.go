package outbound

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/payorch/shared/netguard"
)

// destination is a validated target: the canonical host (lower case, no
// trailing dot; an IPv6 literal without brackets) and the port to dial.
type destination struct {
	https bool
	host  string     // canonical name, dotted-quad IPv4 or IPv6 text
	ip    netip.Addr // set when host is an IP literal
	port  uint16     // always set: the explicit port or the scheme's default
	// explicitPort is true when the URL named a port other than the
	// scheme's default; the canonical authority then carries it.
	explicitPort bool
}

func defaultPort(https bool) uint16 {
	if https {
		return 443
	}
	return 80
}

// authority returns the canonical "host[:port]" for the request URI and the
// Host header (IPv6 in brackets, the port only when not the default).
func (d *destination) authority() string {
	h := d.host
	if d.ip.IsValid() && d.ip.Is6() {
		h = "[" + h + "]"
	}
	if d.explicitPort {
		return h + ":" + strconv.Itoa(int(d.port))
	}
	return h
}

// parseScheme accepts exactly "http" and "https" (fasthttp lower-cases).
func parseScheme(s string) (https bool, r rule) {
	switch {
	case strings.EqualFold(s, "https"):
		return true, ruleOK
	case strings.EqualFold(s, "http"):
		return false, ruleOK
	}
	return false, ruleURLScheme
}

// parseAuthority validates "host[:port]" as it appears in a URL (without
// userinfo) and fills d. It is strict on purpose: anything a resolver,
// inet_aton or a browser could read as a different host is refused rather
// than normalised.
//
//   - IPv4 only as a canonical dotted quad ("127.0.0.1"): decimal
//     (2130706433), octal (0177.0.0.1), hexadecimal (0x7f.1) and short
//     (127.1) forms are refused. A host whose last label looks numeric
//     (all digits, or 0x followed by hex digits) must be a canonical quad,
//     as in the WHATWG URL standard's "ends in a number" rule.
//   - IPv6 only in brackets, without a zone.
//   - Names: ASCII letters, digits, '-' and '_', labels of 1..63 bytes,
//     at most 253 bytes, one optional trailing dot (dropped). Upper case is
//     folded. Non-ASCII names are refused: configure the punycode (xn--)
//     form.
//   - Port: decimal 1..65535 without leading zeros; empty means default.
func parseAuthority(hp string, https bool, d *destination) rule {
	*d = destination{https: https, port: defaultPort(https)}
	if hp == "" {
		return ruleURLEmptyHost
	}
	var host, port string
	if hp[0] == '[' {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return ruleURLHostChars
		}
		host, port = hp[1:end], hp[end+1:]
		if port != "" {
			if port[0] != ':' {
				return ruleURLHostChars
			}
			port = port[1:]
		}
		if strings.IndexByte(host, '%') >= 0 {
			return ruleURLZone
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() {
			return ruleURLHostChars
		}
		if ip.Zone() != "" {
			return ruleURLZone
		}
		d.ip = ip
		d.host = ip.String()
	} else {
		if i := strings.LastIndexByte(hp, ':'); i >= 0 {
			host, port = hp[:i], hp[i+1:]
		} else {
			host = hp
		}
		if r := parseName(host, d); r != ruleOK {
			return r
		}
	}
	if port != "" {
		p, ok := parsePort(port)
		if !ok {
			return ruleURLPort
		}
		d.port = p
		d.explicitPort = p != defaultPort(https)
	}
	return ruleOK
}

func parsePort(s string) (uint16, bool) {
	if len(s) == 0 || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, false
	}
	return uint16(n), true
}

// parseName validates a host that is not a bracketed IPv6 literal.
func parseName(host string, d *destination) rule {
	if host == "" {
		return ruleURLEmptyHost
	}
	// One trailing dot is the same (fully qualified) name: "localhost." is
	// localhost. Two are an empty label.
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return ruleURLHostChars
	}
	upper := false
	labelLen := 0
	lastLabel := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 0x80:
			return ruleURLNonASCIIHost
		case c == '.':
			if labelLen == 0 {
				return ruleURLHostChars
			}
			labelLen = 0
			lastLabel = i + 1
			continue
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case c == '-':
			if labelLen == 0 {
				return ruleURLHostChars
			}
		default:
			// ':' (bare IPv6 or a second port), '%', '[', '\\', '@',
			// spaces, controls: nothing a DNS name may contain.
			return ruleURLHostChars
		}
		labelLen++
		if labelLen > 63 {
			return ruleURLHostChars
		}
	}
	if labelLen == 0 {
		return ruleURLHostChars
	}
	if upper {
		host = strings.ToLower(host)
	}
	if looksNumeric(host[lastLabel:]) {
		ip, err := netip.ParseAddr(host)
		var canon [len("255.255.255.255")]byte // compared in place: no string per check
		if err != nil || !ip.Is4() || string(ip.AppendTo(canon[:0])) != host {
			return ruleURLNonCanonicalIP
		}
		d.ip = ip
	}
	d.host = host
	return ruleOK
}

// looksNumeric reports whether a label is what IPv4 parsers (inet_aton,
// WHATWG URL) read as a number: decimal digits, or 0x/0X with hex digits.
func looksNumeric(label string) bool {
	if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
		for i := 2; i < len(label); i++ {
			if !isHex(label[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return len(label) > 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// checkName applies netguard's name rules to a canonical destination
// host. IP literals pass (the address check judges them).
// allowLoopbackName admits "localhost" (and *.localhost) for a call
// allowed to reach loopback; the addresses they resolve to are still
// checked at connect time.
func checkName(d *destination, allowLoopbackName bool) rule {
	if d.ip.IsValid() {
		return ruleOK
	}
	return guardRule(netguard.CheckName(d.host, allowLoopbackName))
}

// matchEntry reports whether an allow-list entry ("host", "host:port",
// "[v6]" or "[v6]:port") names the destination. Host comparison is exact
// after case folding and dropping a trailing dot; an entry without a port
// matches only the scheme's default port. An entry that is not a valid
// authority matches nothing. It allocates nothing for name and IPv4
// entries.
func matchEntry(entry string, d *destination) bool {
	var host, port string
	if entry == "" {
		return false
	}
	if entry[0] == '[' {
		end := strings.IndexByte(entry, ']')
		if end < 0 {
			return false
		}
		host, port = entry[1:end], entry[end+1:]
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		}
		if !d.ip.IsValid() || !d.ip.Is6() {
			return false
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.Zone() != "" || ip != d.ip {
			return false
		}
	} else {
		if i := strings.LastIndexByte(entry, ':'); i >= 0 {
			host, port = entry[:i], entry[i+1:]
		} else {
			host = entry
		}
		host = strings.TrimSuffix(host, ".")
		if host == "" || !strings.EqualFold(host, d.host) {
			return false
		}
		if d.ip.IsValid() && d.ip.Is6() {
			return false
		}
	}
	want := defaultPort(d.https)
	if port != "" {
		p, ok := parsePort(port)
		if !ok {
			return false
		}
		want = p
	}
	return want == d.port
}

// NormalizeHost validates an allow-list entry as a forwarding config lists
// it ("api.processor.example", "127.0.0.1:9999", "[2001:db8::1]:8443") and
// returns its canonical form: lower case, no trailing dot, canonical IPv6
// text, no leading zeros in the port. It applies the same strict host rules
// as a destination URL; it does not apply the name or address rules (a
// development config may list 127.0.0.1), which are checked on every
// forward.
func NormalizeHost(entry string) (string, error) {
	var d destination
	if r := parseAuthority(entry, true, &d); r != ruleOK {
		return "", newError(CodeInvalidURL, "host entry is not a valid host or host:port", r, nil)
	}
	h := d.host
	if d.ip.IsValid() && d.ip.Is6() {
		h = "[" + h + "]"
	}
	if hasPort(entry) {
		return h + ":" + strconv.Itoa(int(d.port)), nil
	}
	return h, nil
}

func hasPort(entry string) bool {
	if entry != "" && entry[0] == '[' {
		end := strings.IndexByte(entry, ']')
		return end >= 0 && len(entry) > end+2
	}
	i := strings.LastIndexByte(entry, ':')
	return i >= 0 && i < len(entry)-1
}

// crossCheck parses rawURL with net/url as a second opinion on fasthttp's
// parse: both must see the same scheme and the same host and port, and
// net/url must see no user information and no opaque part. A parser
// differential is how "https://allowed.example\\@127.0.0.1/"-style tricks
// work; refusing on disagreement closes it.
func crossCheck(rawURL string, d *destination) rule {
	u, err := url.Parse(rawURL)
	if err != nil || u.Opaque != "" {
		return ruleURLMalformed
	}
	if u.User != nil {
		return ruleURLUserinfo
	}
	https, r := parseScheme(u.Scheme)
	if r != ruleOK {
		return r
	}
	var nd destination
	if r := parseAuthority(u.Host, https, &nd); r != ruleOK {
		return r
	}
	if nd.https != d.https || nd.host != d.host || nd.port != d.port || nd.ip != d.ip {
		return ruleURLMalformed
	}
	return ruleOK
}
