// Package accountidtest holds the merchant account ids the tests of every
// check built on accountid probe.
package accountidtest

import "strings"

// Cases are ids around every edge of accountid.Pattern, valid and not
// ("" excluded: whether an empty value is the default account is the
// caller's to say).
var Cases = []string{
	"a", "0", "acme", "acme-eu_1", "a-", "a_", "0-_",
	strings.Repeat("a", 64), strings.Repeat("a", 65), "a" + strings.Repeat("-", 63), "a" + strings.Repeat("-", 64),
	"-a", "_a", "A", "aB", "acme corp", " acme", "acme ", "acme\n", "\nacme", "acme\x00", "ac.me", "ac/me",
	"é", "aé", "a\xff", "a`", "a{", "a@", "a[", "a:", "a/",
}
