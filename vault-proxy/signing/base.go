package signing

import (
	"crypto/sha256"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Derived component names (RFC 9421 section 2.2) that a request can cover.
// @status is response-only and @query-param needs a parameter, so neither is
// offered.
var derivedComponents = map[string]bool{
	"@method":         true,
	"@target-uri":     true,
	"@authority":      true,
	"@scheme":         true,
	"@request-target": true,
	"@path":           true,
	"@query":          true,
}

const contentDigestField = "content-digest"

// normalizeCovered lowercases field names (RFC 9421 section 2.1 requires
// lowercase identifiers; HTTP names are case-insensitive, so "Content-Type"
// as typed by a merchant means the same field) and rejects what RFC 9421
// does not allow: unknown derived components, @signature-params, repeats.
func normalizeCovered(list []string) ([]string, error) {
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, c := range list {
		name := strings.ToLower(c)
		switch {
		case name == "@signature-params":
			return nil, failf("field \"covered_components\" may not name @signature-params")
		case strings.HasPrefix(name, "@"):
			if !derivedComponents[name] {
				return nil, failf("field \"covered_components\" names unsupported derived component " + quote(c) +
					" (supported: @method @target-uri @authority @scheme @request-target @path @query)")
			}
		case !isToken(name):
			return nil, failf("field \"covered_components\" has " + quote(c) + ", which is not a header field name")
		}
		if seen[name] {
			return nil, failf("field \"covered_components\" names " + quote(name) + " twice")
		}
		seen[name] = true
		out = append(out, name)
	}
	return out, nil
}

// isToken reports whether s is a non-empty HTTP token (RFC 9110 tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// target is the target URI split into the raw pieces the derived components
// need. It is split by hand, not with net/url, so the values are the exact
// bytes on the wire (net/url re-escapes paths it considers non-canonical).
type target struct {
	uri       string // without fragment
	scheme    string // lowercased
	authority string // as sent, without userinfo
	path      string // "/" when empty
	query     string // without "?"
	hasQuery  bool
}

func parseTarget(u string) (target, error) {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u = u[:i]
	}
	i := strings.Index(u, "://")
	if i <= 0 {
		return target{}, failf("request URL is not an absolute URI")
	}
	t := target{uri: u, scheme: strings.ToLower(u[:i])}
	rest := u[i+3:]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	t.authority = rest[:end]
	if at := strings.LastIndexByte(t.authority, '@'); at >= 0 {
		t.authority = t.authority[at+1:]
	}
	if t.authority == "" {
		return target{}, failf("request URL has no host")
	}
	pq := rest[end:]
	if q := strings.IndexByte(pq, '?'); q >= 0 {
		t.path, t.query, t.hasQuery = pq[:q], pq[q+1:], true
	} else {
		t.path = pq
	}
	if t.path == "" {
		t.path = "/"
	}
	return t, nil
}

// normalizedAuthority is @authority per RFC 9421 section 2.2.3: the host
// lowercased and the scheme's default port omitted.
func (t target) normalizedAuthority() string {
	a := strings.ToLower(t.authority)
	switch {
	case t.scheme == "https" && strings.HasSuffix(a, ":443"):
		a = strings.TrimSuffix(a, ":443")
	case t.scheme == "http" && strings.HasSuffix(a, ":80"):
		a = strings.TrimSuffix(a, ":80")
	}
	return a
}

// componentValue returns the value of one covered component. override, when
// non-nil, supplies field values not yet written to the request (the
// Content-Digest the signer is about to set).
func componentValue(req *Request, t target, name string, override map[string]string) (string, error) {
	switch name {
	case "@method":
		return req.Method, nil
	case "@target-uri":
		return t.uri, nil
	case "@authority":
		return t.normalizedAuthority(), nil
	case "@scheme":
		return t.scheme, nil
	case "@request-target":
		if t.hasQuery {
			return t.path + "?" + t.query, nil
		}
		return t.path, nil
	case "@path":
		return t.path, nil
	case "@query":
		return "?" + t.query, nil
	}
	if v, ok := override[name]; ok {
		return v, nil
	}
	var values []string
	if req.Header != nil {
		values = req.Header.Values(name)
	}
	if len(values) == 0 {
		return "", failf("covered component " + quote(name) + " is not a header of the request")
	}
	// RFC 9421 section 2.1: trim each field line, join lines with ", ".
	// Built afresh: http.Header.Values returns the header's own slice.
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.Trim(v, " \t"))
	}
	return b.String(), nil
}

// signatureBase builds the signature base of RFC 9421 section 2.5 and
// returns it with the serialized signature parameters (the value for
// Signature-Input). params must already hold the signature parameters.
func signatureBase(req *Request, covered []string, params *httpsfv.Params, override map[string]string) (base []byte, sigParams string, err error) {
	t, err := parseTarget(req.URL)
	if err != nil {
		return nil, "", err
	}
	items := make([]httpsfv.Item, 0, len(covered))
	var b strings.Builder
	for _, name := range covered {
		v, err := componentValue(req, t, name, override)
		if err != nil {
			return nil, "", err
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, "", failf("covered component " + quote(name) + " has a line break in its value")
		}
		b.WriteString(`"`)
		b.WriteString(name)
		b.WriteString(`": `)
		b.WriteString(v)
		b.WriteString("\n")
		items = append(items, httpsfv.NewItem(name))
	}
	sigParams, err = httpsfv.Marshal(httpsfv.InnerList{Items: items, Params: params})
	if err != nil {
		return nil, "", failf("signature parameters do not serialize (key_id must be printable ASCII)")
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(sigParams)
	return []byte(b.String()), sigParams, nil
}

// ContentDigest returns the RFC 9530 Content-Digest field value for body
// using sha-256, e.g. sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	d := httpsfv.NewDictionary()
	d.Add("sha-256", httpsfv.NewItem(sum[:]))
	v, err := httpsfv.Marshal(d)
	if err != nil {
		// A fixed key and a byte sequence always serialize.
		panic("signing: content digest does not serialize: " + err.Error())
	}
	return v
}

func quote(s string) string { return strconv.Quote(s) }

func itoa(i int) string { return strconv.Itoa(i) }
