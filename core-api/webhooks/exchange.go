package webhooks

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	coreapi "github.com/payorch/core-api"
)

// Header is the request's headers as every attempt sends them, but the
// Basic credentials (the Sender adds those): one place, so what an
// attempt records is what went out. The names are in canonical form, as
// an http.Header keeps them.
func (m Message) Header() map[string][]string {
	return map[string][]string{
		"Content-Type":      {"application/json"},
		"User-Agent":        {"payorch-webhooks/1"},
		"Webhook-Id":        {m.ID},
		"Webhook-Timestamp": {strconv.FormatInt(m.Timestamp.Unix(), 10)},
		"Webhook-Signature": {m.Signature},
	}
}

// sentRequest is what an attempt keeps of its request: the URL and the
// headers, the Basic credentials' Authorization redacted. The body is
// the event's payload, kept once with the event.
func sentRequest(m Message) *coreapi.WebhookRequest {
	headers := make(map[string]string, 6)
	for name, vs := range m.Header() {
		headers[strings.ToLower(name)] = strings.Join(vs, ", ")
	}
	if m.Username != "" {
		headers["authorization"] = coreapi.RedactedHeader
	}
	return &coreapi.WebhookRequest{URL: m.URL, Headers: headers}
}

// keptResponse is what an attempt keeps of an answer: the status, the
// headers (keptHeaders) and, as text, at most MaxWebhookResponseBody
// bytes of the body the Sender read. Credentials the endpoint echoes
// back (credentials: the subscription's, as sent) are redacted, a cut
// body's trailing start of one dropped.
func keptResponse(a Answer, credentials []string) *coreapi.WebhookResponse {
	body, cut := a.Body, a.BodyCut
	if len(body) > coreapi.MaxWebhookResponseBody {
		body, cut = body[:coreapi.MaxWebhookResponseBody], true
	}
	if cut {
		body = dropPartialRune(body)
	}
	s := redact(text(string(body)), credentials)
	if len(s) > coreapi.MaxWebhookResponseBody {
		// Replacements (U+FFFD for one invalid byte, the redaction) made
		// the text longer.
		end := coreapi.MaxWebhookResponseBody
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s, cut = s[:end], true
	}
	if cut {
		s = dropCredentialStart(s, credentials)
	}
	return &coreapi.WebhookResponse{StatusCode: a.Code, Headers: keptHeaders(a.Header, credentials), Body: s, BodyTruncated: cut}
}

// redact replaces every credential in s.
func redact(s string, credentials []string) string {
	for _, c := range credentials {
		if c != "" && strings.Contains(s, c) {
			s = strings.ReplaceAll(s, c, coreapi.RedactedHeader)
		}
	}
	return s
}

// dropCredentialStart drops the end of a cut text when it is the start
// of a credential: the cut would otherwise keep part of it.
func dropCredentialStart(s string, credentials []string) string {
	for _, c := range credentials {
		for k := min(len(c)-1, len(s)); k > 0; k-- {
			if strings.HasSuffix(s, c[:k]) {
				s = s[:len(s)-k]
				break
			}
		}
	}
	return s
}

// echoedCredentials are the forms in which an endpoint may echo the
// Basic credentials back (an echo service shows the request's headers):
// the encoded user:password always, the password alone from
// minEchoedPassword bytes (a shorter one would redact ordinary text);
// each also as a JSON string holds it, since an echo service answers
// JSON, and some encoders escape "/" (which base64 uses) as well as the
// quotes and backslashes a password may hold.
func echoedCredentials(username, password string) []string {
	if username == "" {
		return nil
	}
	forms := []string{base64.StdEncoding.EncodeToString([]byte(username + ":" + password))}
	if len(password) >= minEchoedPassword {
		forms = append(forms, password)
	}
	out := slices.Clone(forms)
	for _, f := range forms {
		quoted, _ := json.Marshal(f) // a string always encodes
		escaped := string(quoted[1 : len(quoted)-1])
		out = append(out, escaped, strings.ReplaceAll(escaped, "/", `\/`))
	}
	// Longest first: a form inside another (a password within the
	// encoded pair) must not break the other's redaction.
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(out)
}

const minEchoedPassword = 4

// dropPartialRune drops the start of a character that a cut body ends
// in, rather than keep it as a replacement character.
func dropPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// secretHeader says whether a response header may carry a credential: its
// value is never kept.
func secretHeader(name string) bool {
	switch name {
	case "set-cookie", "cookie", "authorization", "proxy-authorization":
		return true
	}
	for _, part := range []string{"auth", "token", "secret", "password", "session", "api-key", "apikey", "credential"} {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// keptHeaders bounds an answer's headers: by name, at most
// MaxWebhookResponseHeaders of MaxWebhookResponseHeaderBytes (names and
// values) in all, a header that would pass the bound left out; values
// that may carry a credential redacted, and credentials echoed in others.
func keptHeaders(h map[string][]string, credentials []string) map[string]string {
	if len(h) == 0 {
		return map[string]string{}
	}
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make(map[string]string, min(len(names), coreapi.MaxWebhookResponseHeaders))
	budget := coreapi.MaxWebhookResponseHeaderBytes
	for _, name := range names {
		if len(out) == coreapi.MaxWebhookResponseHeaders {
			break
		}
		lower := text(strings.ToLower(name))
		value := coreapi.RedactedHeader
		if !secretHeader(lower) {
			value = redact(text(strings.Join(h[name], ", ")), credentials)
		}
		if len(lower)+len(value) > budget {
			continue
		}
		budget -= len(lower) + len(value)
		out[lower] = value
	}
	return out
}

// text is s as the database keeps text: valid UTF-8 (invalid bytes
// become U+FFFD) without NUL (U+FFFD too).
func text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
