package outbound

import (
	"net/netip"

	"github.com/payorch/shared/netguard"
)

// rule names the check that refused a destination. Its String is what
// Error.Rule carries: a word for logs and audit, never an address.
type rule uint8

const (
	ruleOK rule = iota

	// URL rules.
	ruleURLMalformed
	ruleURLScheme
	ruleURLUserinfo
	ruleURLEmptyHost
	ruleURLHostChars
	ruleURLNonASCIIHost
	ruleURLNonCanonicalIP
	ruleURLZone
	ruleURLPort
	ruleURLTarget
	ruleURLBodyStream

	// Policy rules.
	ruleHTTPSRequired
	ruleAllowList
	ruleAllowListRequired

	ruleDialMismatch

	// ruleGuard and the values after it are netguard's refusals, the name
	// and address rules, in netguard.Verdict's order (guardRule).
	ruleGuard
)

var ruleNames = [...]string{
	ruleOK:                "ok",
	ruleURLMalformed:      "url_malformed",
	ruleURLScheme:         "url_scheme",
	ruleURLUserinfo:       "url_userinfo",
	ruleURLEmptyHost:      "url_empty_host",
	ruleURLHostChars:      "url_host_characters",
	ruleURLNonASCIIHost:   "url_non_ascii_host",
	ruleURLNonCanonicalIP: "url_non_canonical_ip",
	ruleURLZone:           "url_ipv6_zone",
	ruleURLPort:           "url_port",
	ruleURLTarget:         "url_request_target",
	ruleURLBodyStream:     "request_body_stream",
	ruleHTTPSRequired:     "https_required",
	ruleAllowList:         "not_in_allowed_hosts",
	ruleAllowListRequired: "allowed_hosts_required",
	ruleDialMismatch:      "dial_address_mismatch",
}

func (r rule) String() string {
	if r >= ruleGuard {
		return netguard.Verdict(r - ruleGuard).String()
	}
	if int(r) < len(ruleNames) && ruleNames[r] != "" {
		return ruleNames[r]
	}
	return "unknown"
}

// guardRule is the rule for netguard's verdict: ruleOK when it allows.
func guardRule(v netguard.Verdict) rule {
	if v == netguard.Allowed {
		return ruleOK
	}
	return ruleGuard + rule(v)
}

// isAddressRule reports whether r refused a resolved or literal address
// (as opposed to a name, a URL or the allow-list).
func (r rule) isAddressRule() bool {
	return r >= ruleGuard && netguard.Verdict(r-ruleGuard).IsAddress()
}

// checkAddr applies netguard's address rules to ip, a literal or a
// resolver's answer.
func checkAddr(ip netip.Addr, allowLoopback bool) rule {
	return guardRule(netguard.CheckAddr(ip, allowLoopback))
}
