package logging

import "strings"

// MaskID is a secret identifier (a checkout session id, which is the
// secure fields' only credential) as it may be logged: its first 8
// characters and an ellipsis, enough to tell sessions apart in a
// support case, too little to use one.
func MaskID(id string) string {
	const keep = 8
	if len(id) <= keep {
		return "…"
	}
	return id[:keep] + "…"
}

// MaskPathSegment is path with the segment right after prefix (a route
// whose parameter is a secret identifier, like "/checkout/sessions/")
// masked by MaskID; other paths are returned as they are.
func MaskPathSegment(path, prefix string) string {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok || rest == "" {
		return path
	}
	seg, tail, _ := strings.Cut(rest, "/")
	if tail != "" || strings.HasSuffix(rest, "/") {
		tail = "/" + tail
	}
	return prefix + MaskID(seg) + tail
}
