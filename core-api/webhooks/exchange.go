package webhooks

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	coreapi "github.com/payorch/core-api"
)

// Header is the request's headers as every attempt sends them, but the
// Basic credentials (the Sender adds those): one place, so what an
// attempt records is what went out.
func (m Message) Header() http.Header {
	h := make(http.Header, 6)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "payorch-webhooks/1")
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(m.Timestamp.Unix(), 10))
	h.Set("webhook-signature", m.Signature)
	return h
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
// bytes of the body the Sender read.
func keptResponse(a Answer) *coreapi.WebhookResponse {
	body, cut := a.Body, a.BodyCut
	if len(body) > coreapi.MaxWebhookResponseBody {
		body, cut = body[:coreapi.MaxWebhookResponseBody], true
	}
	if cut {
		body = dropPartialRune(body)
	}
	s := text(string(body))
	if len(s) > coreapi.MaxWebhookResponseBody {
		// Invalid bytes, one each, became three-byte replacements.
		end := coreapi.MaxWebhookResponseBody
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s, cut = s[:end], true
	}
	return &coreapi.WebhookResponse{StatusCode: a.Code, Headers: keptHeaders(a.Header), Body: s, BodyTruncated: cut}
}

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
// that may carry a credential redacted.
func keptHeaders(h http.Header) map[string]string {
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
			value = text(strings.Join(h[name], ", "))
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
