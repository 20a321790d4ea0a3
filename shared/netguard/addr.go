package netguard

import (
	"encoding/binary"
	"net/netip"
)

type prefixRule struct {
	p netip.Prefix
	v Verdict
}

// v4Forbidden lists every IPv4 range a third-party call may never reach,
// from the IANA IPv4 Special-Purpose Address Registry (RFC 6890 and
// successors) plus multicast and the reserved block. 127.0.0.0/8 is handled apart (see
// CheckAddr) because a development instance may be allowed to reach it.
// Order matters only for which rule name is reported.
var v4Forbidden = [...]prefixRule{
	{netip.MustParsePrefix("0.0.0.0/8"), AddrThisNetwork},     // "this host on this network"; 0.0.0.0 dials the local host
	{netip.MustParsePrefix("10.0.0.0/8"), AddrPrivate},        // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), AddrSharedCGNAT}, // RFC 6598 shared / CGNAT (also Alibaba metadata 100.100.100.200)
	{netip.MustParsePrefix("169.254.0.0/16"), AddrLinkLocal},  // RFC 3927, incl. 169.254.169.254 cloud metadata
	{netip.MustParsePrefix("172.16.0.0/12"), AddrPrivate},     // RFC 1918
	{netip.MustParsePrefix("192.0.0.0/24"), AddrProtocolAssignments},
	{netip.MustParsePrefix("192.0.2.0/24"), AddrDocumentation},    // TEST-NET-1
	{netip.MustParsePrefix("192.88.99.0/24"), AddrReserved},       // deprecated 6to4 relay anycast
	{netip.MustParsePrefix("192.168.0.0/16"), AddrPrivate},        // RFC 1918
	{netip.MustParsePrefix("198.18.0.0/15"), AddrBenchmarking},    // RFC 2544
	{netip.MustParsePrefix("198.51.100.0/24"), AddrDocumentation}, // TEST-NET-2
	{netip.MustParsePrefix("203.0.113.0/24"), AddrDocumentation},  // TEST-NET-3
	{netip.MustParsePrefix("224.0.0.0/4"), AddrMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), AddrBroadcast}, // before 240/4 so the name is right
	{netip.MustParsePrefix("240.0.0.0/4"), AddrReserved},
}

var v4Loopback = netip.MustParsePrefix("127.0.0.0/8")

// v6Forbidden lists IPv6 ranges refused outright, checked before the
// "global unicast only" rule so the reported rule is specific.
var v6Forbidden = [...]prefixRule{
	{netip.MustParsePrefix("::/96"), AddrV4Compatible},      // deprecated IPv4-compatible (::a.b.c.d); :: and ::1 are decided before
	{netip.MustParsePrefix("64:ff9b:1::/48"), AddrReserved}, // RFC 8215 local-use NAT64
	{netip.MustParsePrefix("100::/64"), AddrReserved},       // RFC 6666 discard-only
	{netip.MustParsePrefix("2001::/32"), AddrTeredo},        // Teredo: embeds an obfuscated IPv4 server and client
	{netip.MustParsePrefix("2001::/23"), AddrProtocolAssignments},
	{netip.MustParsePrefix("2001:db8::/32"), AddrDocumentation},
	{netip.MustParsePrefix("3fff::/20"), AddrDocumentation}, // RFC 9637
	{netip.MustParsePrefix("5f00::/16"), AddrReserved},      // RFC 9602 SRv6 SIDs
	{netip.MustParsePrefix("fc00::/7"), AddrPrivate},        // unique local (incl. AWS IMDS fd00:ec2::254)
	{netip.MustParsePrefix("fe80::/10"), AddrLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), AddrPrivate}, // deprecated site-local
	{netip.MustParsePrefix("ff00::/8"), AddrMulticast},
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
	v         Verdict
}

type v6Match struct {
	hi, lo, mhi, mlo uint64
	v                Verdict
}

var (
	v4Table            = compileV4(v4Forbidden[:])
	v6Table            = compileV6(v6Forbidden[:])
	v4LoopbackM        = compileV4([]prefixRule{{v4Loopback, AddrLoopback}})[0]
	v6GlobalM          = compileV6([]prefixRule{{v6GlobalUnicast, Allowed}})[0]
	v6NAT64M           = compileV6([]prefixRule{{v6NAT64, Allowed}})[0]
	v6SixToFourM       = compileV6([]prefixRule{{v6SixToFour, Allowed}})[0]
	v6LoopHi, v6LoopLo = split16(v6Loopback.As16())
)

func compileV4(rules []prefixRule) []v4Match {
	out := make([]v4Match, len(rules))
	for i, pr := range rules {
		if !pr.p.Addr().Is4() {
			panic("netguard: IPv4 table holds " + pr.p.String())
		}
		b := pr.p.Masked().Addr().As4()
		mask := ^uint32(0) << (32 - pr.p.Bits())
		if pr.p.Bits() == 0 {
			mask = 0
		}
		out[i] = v4Match{net: binary.BigEndian.Uint32(b[:]), mask: mask, v: pr.v}
	}
	return out
}

func compileV6(rules []prefixRule) []v6Match {
	out := make([]v6Match, len(rules))
	for i, pr := range rules {
		if !pr.p.Addr().Is6() {
			panic("netguard: IPv6 table holds " + pr.p.String())
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
		out[i] = v6Match{hi: hi, lo: lo, mhi: mhi, mlo: mlo, v: pr.v}
	}
	return out
}

func split16(b [16]byte) (hi, lo uint64) {
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

func (m *v4Match) contains(x uint32) bool      { return x&m.mask == m.net }
func (m *v6Match) contains(hi, lo uint64) bool { return hi&m.mhi == m.hi && lo&m.mlo == m.lo }

// CheckAddr decides whether a call to a third party may connect to ip: a
// literal in its URL, and each address a resolver answers for its name
// (one refused answer refuses the destination). It allocates nothing. allowLoopback admits exactly 127.0.0.0/8 and ::1 (and their
// IPv4-mapped forms): never 0.0.0.0/8, ::, or an IPv4 embedded in a
// translation prefix, which also end up on the local host.
func CheckAddr(ip netip.Addr, allowLoopback bool) Verdict {
	if !ip.IsValid() {
		return AddrInvalid
	}
	if ip.Zone() != "" {
		return AddrZone
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
			return Allowed
		}
		return AddrLoopback
	case hi == 0 && lo == 0:
		return AddrUnspecified
	case v6NAT64M.contains(hi, lo):
		// A NAT64 gateway forwards to the embedded IPv4 address. A public
		// one is legitimate on IPv6-only networks (DNS64); anything else,
		// loopback included, is refused whatever allowLoopback says.
		if checkV4(uint32(lo), false) != Allowed {
			return AddrEmbeddedV4
		}
		return Allowed
	case v6SixToFourM.contains(hi, lo):
		if checkV4(uint32(hi>>16), false) != Allowed {
			return AddrEmbeddedV4
		}
		return Allowed
	}
	for i := range v6Table {
		if v6Table[i].contains(hi, lo) {
			return v6Table[i].v
		}
	}
	if !v6GlobalM.contains(hi, lo) {
		return AddrNotGlobal
	}
	return Allowed
}

func checkV4(x uint32, allowLoopback bool) Verdict {
	if v4LoopbackM.contains(x) {
		if allowLoopback {
			return Allowed
		}
		return AddrLoopback
	}
	for i := range v4Table {
		if v4Table[i].contains(x) {
			return v4Table[i].v
		}
	}
	return Allowed
}
