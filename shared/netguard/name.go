package netguard

import "strings"

// reservedSuffixes are name suffixes that only ever resolve inside a
// network (RFC 6761 / 6762 / 8375, ICANN's .internal, Kubernetes service
// names and common private-use TLDs). Resolution would be refused by the
// address check anyway; refusing the name first needs no DNS and does not
// depend on what a resolver answers.
var reservedSuffixes = [...]string{
	".localhost", ".local", ".internal", ".localdomain", ".home.arpa",
	".lan", ".home", ".corp", ".intranet", ".svc", ".cluster.local",
}

// metadataNames are cloud metadata service names outside those suffixes.
var metadataNames = [...]string{"metadata.goog", "metadata.google.internal", "instance-data.ec2.internal"}

// CheckName applies the name rules to host, a canonical host name (lower
// case, no trailing dot); an IP literal is CheckAddr's to judge, not this.
// allowLoopbackName admits "localhost" (and *.localhost) for a call allowed
// to reach loopback; the addresses they resolve to are still to be checked
// at connect time. It allocates nothing.
func CheckName(host string, allowLoopbackName bool) Verdict {
	for _, m := range metadataNames {
		if host == m {
			return NameMetadata
		}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if allowLoopbackName {
			return Allowed
		}
		return NameLocalhost
	}
	// A single-label name is completed from the resolver's search list
	// (metadata, vault, postgres...): never a third party.
	if strings.IndexByte(host, '.') < 0 {
		return NameSingleLabel
	}
	for _, s := range reservedSuffixes {
		if strings.HasSuffix(host, s) {
			return NameReserved
		}
	}
	return Allowed
}
