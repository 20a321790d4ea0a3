// Package outbound is the HTTP client of the PCI zone: every request that
// carries card data to a third party (POST /vault-forward, detokenized
// processor calls) goes through a Client. Outbound calls are hostile
// territory, so a Client enforces, in this order:
//
//  1. The URL, as fasthttp itself parsed it (what it will connect to and
//     write into the request line): http or https only, no user
//     information, a strict host (canonical dotted-quad IPv4 only, bracketed
//     IPv6 without zone, ASCII names), a port in 1..65535, an origin-form
//     request target without control bytes. CheckURL additionally parses
//     the raw string with net/url and refuses any disagreement.
//  2. The policy: https when required, Policy.AllowedHosts and the call's
//     AllowedHosts (exact, case-folded host; an entry without a port means
//     the scheme's default port), the name rules of shared/netguard
//     (netguard.CheckName: cloud metadata names, localhost, single-label
//     names, .internal/.local/...) and, for an IP literal, its address
//     rules (netguard.CheckAddr).
//  3. At connect time, in the dialer fasthttp calls for every new
//     connection: the name is resolved once, every answer is checked by
//     netguard.CheckAddr (the forbidden ranges: loopback, private,
//     link-local and metadata, CGNAT, multicast, broadcast, this-network,
//     documentation, benchmarking, reserved, IPv6 ULA/link-local/site-local,
//     and IPv4 embedded in IPv4-mapped, NAT64 or 6to4 addresses;
//     IPv4-compatible and Teredo entirely; netguard's package comment
//     lists them in the order they are checked), one forbidden answer
//     refuses the destination, and the connection goes to the checked IP,
//     never to the name, so there is no DNS-rebinding window. The
//     socket-level Control hook checks the address once more. Kept-alive
//     connections are reused without a new check: each was checked when
//     made.
//
// Loopback (127.0.0.0/8 and ::1, nothing else) is reachable only with
// Policy.AllowLoopback and only for a host an allow-list names explicitly:
// a development or sandbox instance started with
// VAULT_FORWARD_ALLOW_LOOPBACK=true reaching a target its config lists.
// netguard decides which addresses are loopback; this package decides
// when loopback is allowed.
//
// Requests are sent at most once: fasthttp's retries (of GET, HEAD and PUT
// by default) are off, redirects are returned to the caller and never
// followed, response bodies are capped (CodeResponseTooLarge), request
// bodies too, and every call has a deadline covering resolution, connect,
// TLS, write and read. TLS is the project's policy (certs.BaseTLSConfig:
// TLS 1.2+), trusting the system roots plus Policy.ExtraRootCAs and the
// call's ExtraRootCAs; a call may present a client certificate (mtls),
// each identity getting its own cached connection pool. fasthttp ignores
// HTTP_PROXY and friends, so no environment variable reroutes card data.
//
// Every error is an *Error with a stable Code for the error envelope and a
// Message safe for clients (no request data, no resolved addresses); Rule
// tells logs and audit which check refused a destination (for a name or
// address rule, netguard.Verdict's word).
package outbound
