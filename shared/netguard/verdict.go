package netguard

// Verdict is the outcome of a check: Allowed, or the rule that refused the
// destination.
type Verdict uint8

const (
	Allowed Verdict = iota

	// Name rules (CheckName).
	NameLocalhost
	NameSingleLabel
	NameReserved
	NameMetadata

	// Address rules (CheckAddr).
	AddrInvalid
	AddrLoopback
	AddrThisNetwork
	AddrUnspecified
	AddrPrivate
	AddrSharedCGNAT
	AddrLinkLocal
	AddrMulticast
	AddrBroadcast
	AddrReserved
	AddrDocumentation
	AddrBenchmarking
	AddrProtocolAssignments
	AddrTeredo
	AddrEmbeddedV4
	AddrV4Compatible
	AddrNotGlobal
	AddrZone

	numVerdicts
)

var verdictNames = [numVerdicts]string{
	Allowed:                 "ok",
	NameLocalhost:           "name_localhost",
	NameSingleLabel:         "name_single_label",
	NameReserved:            "name_reserved_suffix",
	NameMetadata:            "name_metadata",
	AddrInvalid:             "address_invalid",
	AddrLoopback:            "address_loopback",
	AddrThisNetwork:         "address_this_network",
	AddrUnspecified:         "address_unspecified",
	AddrPrivate:             "address_private",
	AddrSharedCGNAT:         "address_shared_cgnat",
	AddrLinkLocal:           "address_link_local",
	AddrMulticast:           "address_multicast",
	AddrBroadcast:           "address_broadcast",
	AddrReserved:            "address_reserved",
	AddrDocumentation:       "address_documentation",
	AddrBenchmarking:        "address_benchmarking",
	AddrProtocolAssignments: "address_protocol_assignments",
	AddrTeredo:              "address_teredo",
	AddrEmbeddedV4:          "address_embeds_forbidden_ipv4",
	AddrV4Compatible:        "address_ipv4_compatible",
	AddrNotGlobal:           "address_not_global_unicast",
	AddrZone:                "address_zone",
}

func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return "unknown"
}

// IsAddress reports whether v is an address rule's refusal (as opposed to
// a name rule's, or Allowed).
func (v Verdict) IsAddress() bool { return v >= AddrInvalid && v <= AddrZone }
