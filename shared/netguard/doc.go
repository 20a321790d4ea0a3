// Package netguard decides which network destinations a request to a
// third party may reach. It is the policy, not a client: vault-proxy's
// outbound client applies it to every URL it is given and at every connect
// (card data leaves the PCI zone only through it), and any service that
// calls addresses a client chose (webhook delivery) applies the same rules
// in its own dialer. It links nothing but the standard library.
//
// CheckName judges a host name before any resolution, in this order:
//
//  1. cloud metadata service names (metadata.goog,
//     metadata.google.internal, instance-data.ec2.internal);
//  2. localhost and *.localhost, unless loopback names are allowed;
//  3. single-label names, which a resolver completes from its search list
//     (metadata, vault, postgres...);
//  4. names under suffixes that only resolve inside a network (.local,
//     .internal, .svc, .cluster.local, .home.arpa, .lan, .corp, ...).
//
// CheckAddr judges an IP address, a literal or each resolver answer, in
// this order: invalid, IPv6 zone, then the address with an IPv4-mapped one
// judged as its IPv4 address. IPv4: loopback 127.0.0.0/8 (unless allowed),
// then the IANA special-purpose registry: this-network 0/8, private 10/8,
// 172.16/12 and 192.168/16, shared/CGNAT 100.64/10 (Alibaba's metadata
// service among them), link-local 169.254/16 (the cloud metadata address
// 169.254.169.254), protocol assignments 192.0.0/24, documentation,
// the 6to4 relay anycast, benchmarking 198.18/15, multicast 224/4,
// broadcast and reserved 240/4. IPv6: loopback ::1 (unless allowed),
// unspecified ::, NAT64 64:ff9b::/96 and 6to4 2002::/16 judged by the IPv4
// address they embed (which may never be loopback), then IPv4-compatible
// ::/96, local-use NAT64, discard-only, Teredo 2001::/32, protocol
// assignments, documentation, SRv6, unique local fc00::/7 (AWS's metadata
// service fd00:ec2::254), link-local, site-local and multicast; last,
// anything outside global unicast 2000::/3.
//
// Loopback (127.0.0.0/8 and ::1, nothing else) passes only when the caller
// allows it, for a development or sandbox instance reaching a target it
// lists explicitly; never 0.0.0.0/8, ::, or an IPv4 address embedded in a
// translation prefix, which also reach the local host.
//
// A Verdict's String is a stable word for logs and audit records, never
// an address.
package netguard
