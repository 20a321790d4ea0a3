package netguard

import (
	"net/netip"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	for _, tt := range []struct {
		ip       string
		loopback bool
		want     Verdict
	}{
		{"93.184.216.34", false, Allowed},
		{"8.8.8.8", false, Allowed},
		{"1.1.1.1", false, Allowed},
		{"172.15.255.255", false, Allowed},
		{"172.32.0.1", false, Allowed},
		{"100.63.255.255", false, Allowed},
		{"100.128.0.0", false, Allowed},
		{"198.20.0.1", false, Allowed},
		{"223.255.255.255", false, Allowed},
		{"2606:2800:220:1:248:1893:25c8:1946", false, Allowed},
		{"2a00:1450:4001:82a::200e", false, Allowed},
		{"::ffff:93.184.216.34", false, Allowed},
		{"64:ff9b::5db8:d822", false, Allowed}, // NAT64 of a public address
		{"2002:5db8:d822::1", false, Allowed},  // 6to4 of a public address

		{"127.0.0.1", false, AddrLoopback},
		{"127.255.255.254", false, AddrLoopback},
		{"::1", false, AddrLoopback},
		{"::ffff:127.0.0.1", false, AddrLoopback},
		{"0.0.0.0", false, AddrThisNetwork},
		{"0.1.2.3", false, AddrThisNetwork},
		{"::", false, AddrUnspecified},
		{"10.0.0.1", false, AddrPrivate},
		{"10.255.255.255", false, AddrPrivate},
		{"172.16.0.1", false, AddrPrivate},
		{"172.31.255.255", false, AddrPrivate},
		{"192.168.1.1", false, AddrPrivate},
		{"100.64.0.1", false, AddrSharedCGNAT},
		{"100.100.100.200", false, AddrSharedCGNAT},
		{"169.254.169.254", false, AddrLinkLocal},
		{"::ffff:169.254.169.254", false, AddrLinkLocal},
		{"192.0.0.1", false, AddrProtocolAssignments},
		{"192.0.0.170", false, AddrProtocolAssignments},
		{"192.0.2.1", false, AddrDocumentation},
		{"198.51.100.7", false, AddrDocumentation},
		{"203.0.113.9", false, AddrDocumentation},
		{"198.18.0.1", false, AddrBenchmarking},
		{"198.19.255.255", false, AddrBenchmarking},
		{"192.88.99.1", false, AddrReserved},
		{"224.0.0.1", false, AddrMulticast},
		{"239.255.255.250", false, AddrMulticast},
		{"240.0.0.1", false, AddrReserved},
		{"255.255.255.255", false, AddrBroadcast},
		{"fe80::1", false, AddrLinkLocal},
		{"febf::1", false, AddrLinkLocal},
		{"fec0::1", false, AddrPrivate},
		{"fc00::1", false, AddrPrivate},
		{"fd00:ec2::254", false, AddrPrivate},
		{"ff02::1", false, AddrMulticast},
		{"64:ff9b::7f00:1", false, AddrEmbeddedV4},
		{"64:ff9b::a9fe:a9fe", false, AddrEmbeddedV4},
		{"64:ff9b::a00:1", false, AddrEmbeddedV4},
		{"64:ff9b:1::1", false, AddrReserved},
		{"2002:7f00:1::", false, AddrEmbeddedV4},
		{"2002:a9fe:a9fe::1", false, AddrEmbeddedV4},
		{"2002:c0a8:101::1", false, AddrEmbeddedV4},
		{"2001::1", false, AddrTeredo},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, AddrTeredo},
		{"2001:2::1", false, AddrProtocolAssignments},
		{"2001:db8::1", false, AddrDocumentation},
		{"3fff::1", false, AddrDocumentation},
		{"::127.0.0.1", false, AddrV4Compatible},
		{"::8.8.8.8", false, AddrV4Compatible},
		{"::ffff:0:7f00:1", false, AddrNotGlobal}, // SIIT IPv4-translated
		{"100::1", false, AddrReserved},
		{"5f00::1", false, AddrReserved},
		{"4000::1", false, AddrNotGlobal},
		{"fe80::1%eth0", false, AddrZone},

		// AllowLoopback admits 127/8 and ::1 only.
		{"127.0.0.1", true, Allowed},
		{"127.1.2.3", true, Allowed},
		{"::1", true, Allowed},
		{"::ffff:127.0.0.1", true, Allowed},
		{"0.0.0.0", true, AddrThisNetwork},
		{"::", true, AddrUnspecified},
		{"10.0.0.1", true, AddrPrivate},
		{"169.254.169.254", true, AddrLinkLocal},
		{"64:ff9b::7f00:1", true, AddrEmbeddedV4},
		{"2002:7f00:1::", true, AddrEmbeddedV4},
		{"::127.0.0.1", true, AddrV4Compatible},
	} {
		if got := CheckAddr(netip.MustParseAddr(tt.ip), tt.loopback); got != tt.want {
			t.Errorf("CheckAddr(%s, loopback=%v) = %v, want %v", tt.ip, tt.loopback, got, tt.want)
		}
	}
	if got := CheckAddr(netip.Addr{}, true); got != AddrInvalid {
		t.Errorf("zero Addr: %v", got)
	}
}

func TestCheckAddrAllocs(t *testing.T) {
	ips := []netip.Addr{
		netip.MustParseAddr("93.184.216.34"),
		netip.MustParseAddr("10.0.0.1"),
		netip.MustParseAddr("::ffff:169.254.169.254"),
		netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946"),
		netip.MustParseAddr("64:ff9b::7f00:1"),
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, ip := range ips {
			_ = CheckAddr(ip, false)
		}
	}); n != 0 {
		t.Errorf("CheckAddr allocates %v times", n)
	}
}

func BenchmarkCheckAddr(b *testing.B) {
	for _, s := range []string{
		"93.184.216.34",                      // public IPv4: walks the whole table
		"10.0.0.1",                           // refused early
		"::ffff:93.184.216.34",               // mapped, resolver style
		"2606:2800:220:1:248:1893:25c8:1946", // public IPv6: whole table
		"64:ff9b::5db8:d822",                 // NAT64
	} {
		ip := netip.MustParseAddr(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = CheckAddr(ip, false)
			}
		})
	}
}

// referenceCheck is CheckAddr written with netip.Prefix.Contains on the
// source tables: the compiled masks must agree with it everywhere.
func referenceCheck(ip netip.Addr, allowLoopback bool) Verdict {
	if !ip.IsValid() {
		return AddrInvalid
	}
	if ip.Zone() != "" {
		return AddrZone
	}
	ip = ip.Unmap()
	v4 := func(ip netip.Addr, lb bool) Verdict {
		if v4Loopback.Contains(ip) {
			if lb {
				return Allowed
			}
			return AddrLoopback
		}
		for _, pr := range v4Forbidden {
			if pr.p.Contains(ip) {
				return pr.v
			}
		}
		return Allowed
	}
	if ip.Is4() {
		return v4(ip, allowLoopback)
	}
	b := ip.As16()
	switch {
	case ip == v6Loopback:
		if allowLoopback {
			return Allowed
		}
		return AddrLoopback
	case ip.IsUnspecified():
		return AddrUnspecified
	case v6NAT64.Contains(ip):
		if v4(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), false) != Allowed {
			return AddrEmbeddedV4
		}
		return Allowed
	case v6SixToFour.Contains(ip):
		if v4(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), false) != Allowed {
			return AddrEmbeddedV4
		}
		return Allowed
	}
	for _, pr := range v6Forbidden {
		if pr.p.Contains(ip) {
			return pr.v
		}
	}
	if !v6GlobalUnicast.Contains(ip) {
		return AddrNotGlobal
	}
	return Allowed
}

func FuzzCheckAddrMatchesReference(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, false)
	f.Add([]byte{0x20, 0x02, 0x7f, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, true)
	f.Add([]byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1}, false)
	f.Fuzz(func(t *testing.T, b []byte, lb bool) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		if got, want := CheckAddr(ip, lb), referenceCheck(ip, lb); got != want {
			t.Fatalf("CheckAddr(%v, %v) = %v, reference %v", ip, lb, got, want)
		}
	})
}

// TestCheckAddrMatchesReference probes every table boundary (first, last,
// one below, one above) and a deterministic spread of addresses.
func TestCheckAddrMatchesReference(t *testing.T) {
	var probes []netip.Addr
	var all []prefixRule
	all = append(all, v4Forbidden[:]...)
	all = append(all, v6Forbidden[:]...)
	all = append(all, prefixRule{p: v4Loopback}, prefixRule{p: v6GlobalUnicast}, prefixRule{p: v6NAT64}, prefixRule{p: v6SixToFour})
	for _, pr := range all {
		first := pr.p.Masked().Addr()
		last := first
		for i := 0; i < 1<<10 && pr.p.Contains(last.Next()); i++ { // walk a little, then jump to the end
			last = last.Next()
		}
		if b := pr.p.Addr().BitLen() - pr.p.Bits(); b > 10 {
			last = lastOf(pr.p)
		}
		probes = append(probes, first, first.Prev(), first.Next(), last, last.Prev(), last.Next())
	}
	n := 200000
	if testing.Short() || raceEnabled {
		n = 20000
	}
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		var b4 [4]byte
		var b16 [16]byte
		for j := range b4 {
			b4[j] = byte(x >> (8 * j))
		}
		for j := range b16 {
			b16[j] = byte(x >> (4 * j))
		}
		b16[0] = byte(x>>56) & 0x3f // bias towards 2000::/3 and the low prefixes
		probes = append(probes, netip.AddrFrom4(b4), netip.AddrFrom16(b16), netip.AddrFrom16(b4in6(b4)))
	}
	for _, ip := range probes {
		if !ip.IsValid() {
			continue
		}
		for _, lb := range []bool{false, true} {
			if got, want := CheckAddr(ip, lb), referenceCheck(ip, lb); got != want {
				t.Fatalf("CheckAddr(%v, %v) = %v, reference %v", ip, lb, got, want)
			}
		}
	}
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func b4in6(b [4]byte) [16]byte {
	return [16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}
}
