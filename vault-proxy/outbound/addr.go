package outbound

import (
	"encoding/binary"
	"net/netip"
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

	// Name rules.
	ruleNameLocalhost
	ruleNameSingleLabel
	ruleNameReserved
	ruleNameMetadata

	// Address rules.
	ruleAddrInvalid
	ruleAddrLoopback
	ruleAddrThisNetwork
	ruleAddrUnspecified
	ruleAddrPrivate
	ruleAddrSharedCGNAT
	ruleAddrLinkLocal
	ruleAddrMulticast
	ruleAddrBroadcast
	ruleAddrReserved
	ruleAddrDocumentation
	ruleAddrBenchmarking
	ruleAddrProtocolAssignments
	ruleAddrTeredo
	ruleAddrEmbeddedV4
	ruleAddrV4Compatible
	ruleAddrNotGlobal
	ruleAddrZone

	ruleDialMismatch
)

var ruleNames = [...]string{
	ruleOK:                      "ok",
	ruleURLMalformed:            "url_malformed",
	ruleURLScheme:               "url_scheme",
	ruleURLUserinfo:             "url_userinfo",
	ruleURLEmptyHost:            "url_empty_host",
	ruleURLHostChars:            "url_host_characters",
	ruleURLNonASCIIHost:         "url_non_ascii_host",
	ruleURLNonCanonicalIP:       "url_non_canonical_ip",
	ruleURLZone:                 "url_ipv6_zone",
	ruleURLPort:                 "url_port",
	ruleURLTarget:               "url_request_target",
	ruleURLBodyStream:           "request_body_stream",
	ruleHTTPSRequired:           "https_required",
	ruleAllowList:               "not_in_allowed_hosts",
	ruleAllowListRequired:       "allowed_hosts_required",
	ruleNameLocalhost:           "name_localhost",
	ruleNameSingleLabel:         "name_single_label",
	ruleNameReserved:            "name_reserved_suffix",
	ruleNameMetadata:            "name_metadata",
	ruleAddrInvalid:             "address_invalid",
	ruleAddrLoopback:            "address_loopback",
	ruleAddrThisNetwork:         "address_this_network",
	ruleAddrUnspecified:         "address_unspecified",
	ruleAddrPrivate:             "address_private",
	ruleAddrSharedCGNAT:         "address_shared_cgnat",
	ruleAddrLinkLocal:           "address_link_local",
	ruleAddrMulticast:           "address_multicast",
	ruleAddrBroadcast:           "address_broadcast",
	ruleAddrReserved:            "address_reserved",
	ruleAddrDocumentation:       "address_documentation",
	ruleAddrBenchmarking:        "address_benchmarking",
	ruleAddrProtocolAssignments: "address_protocol_assignments",
	ruleAddrTeredo:              "address_teredo",
	ruleAddrEmbeddedV4:          "address_embeds_forbidden_ipv4",
	ruleAddrV4Compatible:        "address_ipv4_compatible",
	ruleAddrNotGlobal:           "address_not_global_unicast",
	ruleAddrZone:                "address_zone",
	ruleDialMismatch:            "dial_address_mismatch",
}

func (r rule) String() string {
	if int(r) < len(ruleNames) && ruleNames[r] != "" {
		return ruleNames[r]
	}
	return "unknown"
}

// isAddressRule reports whether r refused a resolved or literal address
// (as opposed to a name, a URL or the allow-list).
func (r rule) isAddressRule() bool { return r >= ruleAddrInvalid && r <= ruleAddrZone }

type prefixRule struct {
	p netip.Prefix
	r rule
}

// v4Forbidden lists every IPv4 range a forward may never reach, from the
// IANA IPv4 Special-Purpose Address Registry (RFC 6890 and successors) plus
// multicast and the reserved block. 127.0.0.0/8 is handled apart (see
// checkAddr) because a development instance may be allowed to reach it.
// Order matters only for which rule name is reported.
var v4Forbidden = [...]prefixRule{
	{netip.MustParsePrefix("0.0.0.0/8"), ruleAddrThisNetwork},     // "this host on this network"; 0.0.0.0 dials the local host
	{netip.MustParsePrefix("10.0.0.0/8"), ruleAddrPrivate},        // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), ruleAddrSharedCGNAT}, // RFC 6598 shared / CGNAT (also Alibaba metadata 100.100.100.200)
	{netip.MustParsePrefix("169.254.0.0/16"), ruleAddrLinkLocal},  // RFC 3927, incl. 169.254.169.254 cloud metadata
	{netip.MustParsePrefix("172.16.0.0/12"), ruleAddrPrivate},     // RFC 1918
	{netip.MustParsePrefix("192.0.0.0/24"), ruleAddrProtocolAssignments},
	{netip.MustParsePrefix("192.0.2.0/24"), ruleAddrDocumentation},    // TEST-NET-1
	{netip.MustParsePrefix("192.88.99.0/24"), ruleAddrReserved},       // deprecated 6to4 relay anycast
	{netip.MustParsePrefix("192.168.0.0/16"), ruleAddrPrivate},        // RFC 1918
	{netip.MustParsePrefix("198.18.0.0/15"), ruleAddrBenchmarking},    // RFC 2544
	{netip.MustParsePrefix("198.51.100.0/24"), ruleAddrDocumentation}, // TEST-NET-2
	{netip.MustParsePrefix("203.0.113.0/24"), ruleAddrDocumentation},  // TEST-NET-3
	{netip.MustParsePrefix("224.0.0.0/4"), ruleAddrMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), ruleAddrBroadcast}, // before 240/4 so the name is right
	{netip.MustParsePrefix("240.0.0.0/4"), ruleAddrReserved},
}

var v4Loopback = netip.MustParsePrefix("127.0.0.0/8")

// v6Forbidden lists IPv6 ranges refused outright, checked before the
// "global unicast only" rule so the reported rule is specific.
var v6Forbidden = [...]prefixRule{
	{netip.MustParsePrefix("::/96"), ruleAddrV4Compatible},      // deprecated IPv4-compatible (::a.b.c.d); :: and ::1 are decided before
	{netip.MustParsePrefix("64:ff9b:1::/48"), ruleAddrReserved}, // RFC 8215 local-use NAT64
	{netip.MustParsePrefix("100::/64"), ruleAddrReserved},       // RFC 6666 discard-only
	{netip.MustParsePrefix("2001::/32"), ruleAddrTeredo},        // Teredo: embeds an obfuscated IPv4 server and client
	{netip.MustParsePrefix("2001::/23"), ruleAddrProtocolAssignments},
	{netip.MustParsePrefix("2001:db8::/32"), ruleAddrDocumentation},
	{netip.MustParsePrefix("3fff::/20"), ruleAddrDocumentation}, // RFC 9637
	{netip.MustParsePrefix("5f00::/16"), ruleAddrReserved},      // RFC 9602 SRv6 SIDs
	{netip.MustParsePrefix("fc00::/7"), ruleAddrPrivate},        // unique local (incl. AWS IMDS fd00:ec2::254)
	{netip.MustParsePrefix("fe80::/10"), ruleAddrLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), ruleAddrPrivate}, // deprecated site-local
	{netip.MustParsePrefix("ff00::/8"), ruleAddrMulticast},
}

var (
	v6GlobalUnicast = netip.MustParsePrefix("2000::/3")
	v6NAT64         = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052 well-known prefix: last 32 bits are an IPv4 address
	v6SixToFour     = netip.MustParsePrefix("2002::/16")    // RFC 3056: bits 16..47 are an IPv4 address
	v6Loopback      = netip.IPv6Loopback()
)

// The tables above are compiled once into masks, so a check is a handful
// of integer compares: netip.Prefix.Contains is general (and ~10x slower),
// and every new connection checks every resolved address.
type v4Match struct {
	net, mask uint32
	r         rule
}

type v6Match struct {
	hi, lo, mhi, mlo uint64
	r                rule
}

var (
	v4Table            = compileV4(v4Forbidden[:])
	v6Table            = compileV6(v6Forbidden[:])
	v4LoopbackM        = compileV4([]prefixRule{{v4Loopback, ruleAddrLoopback}})[0]
	v6GlobalM          = compileV6([]prefixRule{{v6GlobalUnicast, ruleOK}})[0]
	v6NAT64M           = compileV6([]prefixRule{{v6NAT64, ruleOK}})[0]
	v6SixToFourM       = compileV6([]prefixRule{{v6SixToFour, ruleOK}})[0]
	v6LoopHi, v6LoopLo = split16(v6Loopback.As16())
)

func compileV4(rules []prefixRule) []v4Match {
	out := make([]v4Match, len(rules))
	for i, pr := range rules {
		if !pr.p.Addr().Is4() {
			panic("outbound: IPv4 table holds " + pr.p.String())
		}
		b := pr.p.Masked().Addr().As4()
		mask := ^uint32(0) << (32 - pr.p.Bits())
		if pr.p.Bits() == 0 {
			mask = 0
		}
		out[i] = v4Match{net: binary.BigEndian.Uint32(b[:]), mask: mask, r: pr.r}
	}
	return out
}

func compileV6(rules []prefixRule) []v6Match {
	out := make([]v6Match, len(rules))
	for i, pr := range rules {
		if !pr.p.Addr().Is6() {
			panic("outbound: IPv6 table holds " + pr.p.String())
		}
		hi, lo := split16(pr.p.Masked().Addr().As16())
		bits := pr.p.Bits()
		var mhi, mlo uint64
		switch {
		case bits >= 128:
			mhi, mlo = ^uint64(0), ^uint64(0)
		case bits > 64:
			mhi, mlo = ^uint64(0), ^uint64(0)<<(128-bits)
		case bits == 64:
			mhi = ^uint64(0)
		case bits > 0:
			mhi = ^uint64(0) << (64 - bits)
		}
		out[i] = v6Match{hi: hi, lo: lo, mhi: mhi, mlo: mlo, r: pr.r}
	}
	return out
}

func split16(b [16]byte) (hi, lo uint64) {
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

func (m *v4Match) contains(x uint32) bool      { return x&m.mask == m.net }
func (m *v6Match) contains(hi, lo uint64) bool { return hi&m.mhi == m.hi && lo&m.mlo == m.lo }

// checkAddr decides whether a forward may connect to ip. It allocates
// nothing. allowLoopback admits exactly 127.0.0.0/8 and ::1 (and their
// IPv4-mapped forms): never 0.0.0.0/8, ::, or an IPv4 embedded in a
// translation prefix, which also end up on the local host.
func checkAddr(ip netip.Addr, allowLoopback bool) rule {
	if !ip.IsValid() {
		return ruleAddrInvalid
	}
	if ip.Zone() != "" {
		return ruleAddrZone
	}
	// ::ffff:a.b.c.d is dialled as a.b.c.d: judge it as that.
	ip = ip.Unmap()
	if ip.Is4() {
		b := ip.As4()
		return checkV4(binary.BigEndian.Uint32(b[:]), allowLoopback)
	}
	b := ip.As16()
	hi, lo := split16(b)
	switch {
	case hi == v6LoopHi && lo == v6LoopLo:
		if allowLoopback {
			return ruleOK
		}
		return ruleAddrLoopback
	case hi == 0 && lo == 0:
		return ruleAddrUnspecified
	case v6NAT64M.contains(hi, lo):
		// A NAT64 gateway forwards to the embedded IPv4 address. A public
		// one is legitimate on IPv6-only networks (DNS64); anything else,
		// loopback included, is refused whatever allowLoopback says.
		if checkV4(uint32(lo), false) != ruleOK {
			return ruleAddrEmbeddedV4
		}
		return ruleOK
	case v6SixToFourM.contains(hi, lo):
		if checkV4(uint32(hi>>16), false) != ruleOK {
			return ruleAddrEmbeddedV4
		}
		return ruleOK
	}
	for i := range v6Table {
		if v6Table[i].contains(hi, lo) {
			return v6Table[i].r
		}
	}
	if !v6GlobalM.contains(hi, lo) {
		return ruleAddrNotGlobal
	}
	return ruleOK
}

func checkV4(x uint32, allowLoopback bool) rule {
	if v4LoopbackM.contains(x) {
		if allowLoopback {
			return ruleOK
		}
		return ruleAddrLoopback
	}
	for i := range v4Table {
		if v4Table[i].contains(x) {
			return v4Table[i].r
		}
	}
	return ruleOK
}
