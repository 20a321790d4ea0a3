package forwardconfig

import (
	"regexp"
	"strings"
)

// jwkPrivateMember finds, in JSON, a member that only a private or
// symmetric JWK has (RFC 7518 section 6): d for EC, OKP and RSA keys, the
// RSA CRT values and other primes, k for an oct key (all secret). The text
// is searched rather than parsed so that a JWK Set, an array of keys or a
// JWK with a typo (stored as entered, valid or not) is caught as well; no
// public JWK member has one of these names.
var jwkPrivateMember = regexp.MustCompile(`"(d|p|q|dp|dq|qi|oth|k)"\s*:`)

// HoldsPrivateKey reports whether v carries private key material: a PEM
// block whose label names a private key (PRIVATE KEY, RSA PRIVATE KEY, EC
// PRIVATE KEY, ENCRYPTED PRIVATE KEY, OPENSSH PRIVATE KEY, ...), or JSON
// holding a JWK with a private member.
//
// It is a safety check of the fields returned in clear, not a validation
// of credentials: a value it lets through is stored exactly as entered,
// usable or not.
func HoldsPrivateKey(v string) bool {
	if pemPrivateKey(v) {
		return true
	}
	if t := strings.TrimLeft(v, " \t\r\n"); !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		return false
	}
	return jwkPrivateMember.MatchString(v)
}

// pemPrivateKey looks at the label of every PEM begin line, whether or not
// its block decodes: a key with a damaged line is still a key.
func pemPrivateKey(v string) bool {
	const begin = "-----BEGIN "
	for {
		i := strings.Index(v, begin)
		if i < 0 {
			return false
		}
		v = v[i+len(begin):]
		label, _, found := strings.Cut(v, "-----")
		if found && strings.Contains(strings.ToUpper(label), "PRIVATE KEY") {
			return true
		}
	}
}
