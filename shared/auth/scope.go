package auth

import "strings"

// Actions of a scope.
const (
	ActionRead  = "read"
	ActionWrite = "write"
)

// maxResourceLen bounds the resource part of a scope.
const maxResourceLen = 64

// ValidScope reports whether s is a scope that may be granted:
// `<resource>.read`, `<resource>.write`, `*.read` or `*.write`.
func ValidScope(s string) bool {
	_, _, ok := splitScope(s)
	return ok
}

// Match reports whether the granted scopes allow needed, a concrete scope
// such as "buyers.write". `*.read` and `*.write` match every resource, and
// a write scope also allows reading the same resource. A needed scope that
// is not concrete (a wildcard or malformed) matches nothing.
func Match(granted []string, needed string) bool {
	res, act, ok := splitScope(needed)
	if !ok || res == "*" {
		return false
	}
	for _, g := range granted {
		gres, gact, ok := splitScope(g)
		if !ok || (gres != "*" && gres != res) {
			continue
		}
		if gact == act || gact == ActionWrite && act == ActionRead {
			return true
		}
	}
	return false
}

// splitScope splits a grantable scope into resource and action.
func splitScope(s string) (resource, action string, ok bool) {
	resource, action, ok = strings.Cut(s, ".")
	if !ok || (action != ActionRead && action != ActionWrite) {
		return "", "", false
	}
	if resource == "*" || validResource(resource) {
		return resource, action, true
	}
	return "", "", false
}

func validResource(r string) bool {
	if len(r) == 0 || len(r) > maxResourceLen || r[0] < 'a' || r[0] > 'z' {
		return false
	}
	for i := 1; i < len(r); i++ {
		c := r[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
