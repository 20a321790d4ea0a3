package signing

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// Header is the header access the signer needs. It is an interface so that
// the package works with fasthttp (the forwarder) and net/http (simulators)
// alike; http.Header satisfies it as it is.
type Header interface {
	// Values returns every field line of the named field, in message order;
	// the name is matched case-insensitively.
	Values(name string) []string
	// Set replaces every field line of the named field with one.
	Set(name, value string)
}

// Request is a transport-neutral view of the request being signed or
// verified. Build it right before Sign or Verify: Body is read from here, not
// from the transport, so a later change to the transport's body is not seen.
type Request struct {
	// Method is the request method as sent, e.g. "POST".
	Method string
	// URL is the absolute target URI as sent on the wire:
	// scheme "://" authority path-and-query. A fragment is ignored.
	URL string
	// Header gives read and write access to the request's header fields.
	Header Header
	// Body is the request content exactly as sent.
	Body []byte
}

// FromFastHTTP returns the view of a fasthttp client request, with the
// target URI and Host that fasthttp's Request.Write will put on the wire.
// It parses req's URI (as Write would), so call it after the URI, the Host
// header and the body are final. The returned Request writes headers back
// to req.
func FromFastHTTP(req *fasthttp.Request) *Request {
	uri := req.URI()
	// The path is signed as it goes on the wire (RFC 9421 2.2.6: before
	// any percent-decoding). fasthttp normalises it by default (decoding
	// escapes, merging "//", removing dot-segments), so a signature over
	// that view would not verify at a target that got "/a%40b" or "/v1//x";
	// the outbound client sends paths unnormalised, and so does this view.
	uri.DisablePathNormalizing = true
	// Request.Write sends the URI's host unless UseHostHeader keeps an
	// explicitly set Host header; mirror that so @authority and the host
	// field match what the target receives.
	host := string(uri.Host())
	if hh := req.Header.Host(); len(hh) > 0 && (req.UseHostHeader || host == "") {
		host = string(hh)
	}
	body := req.Body()
	// Request.Write sets Content-Length from the body it sends, except for a
	// GET or HEAD with no body; report that value, not a stale header.
	contentLength := ""
	if len(body) != 0 || !(req.Header.IsGet() || req.Header.IsHead()) {
		contentLength = strconv.Itoa(len(body))
	}
	return &Request{
		Method: string(req.Header.Method()),
		URL:    string(uri.Scheme()) + "://" + host + string(uri.RequestURI()),
		Header: fastHeader{req: req, host: host, contentLength: contentLength, contentType: sentContentType(&req.Header)},
		Body:   body,
	}
}

// sentContentType is the Content-Type fasthttp will write. Without an
// explicit one it writes a default for requests with a body unless told not
// to (SetNoDefaultContentType, which has no getter), so the serialized
// header is read back rather than the rule copied.
func sentContentType(h *fasthttp.RequestHeader) string {
	if ct := h.ContentType(); len(ct) > 0 {
		return string(ct)
	}
	const prefix = "\r\nContent-Type: "
	raw := string(h.Header())
	i := strings.Index(raw, prefix)
	if i < 0 {
		return ""
	}
	v := raw[i+len(prefix):]
	if j := strings.Index(v, "\r\n"); j >= 0 {
		v = v[:j]
	}
	return v
}

type fastHeader struct {
	req           *fasthttp.Request
	host          string
	contentLength string
	contentType   string
}

func (h fastHeader) Values(name string) []string {
	switch strings.ToLower(name) {
	case "host":
		return nonEmpty(h.host)
	case "content-length":
		return nonEmpty(h.contentLength)
	case "content-type":
		return nonEmpty(h.contentType)
	}
	all := h.req.Header.PeekAll(name)
	out := make([]string, 0, len(all))
	for _, v := range all {
		out = append(out, string(v))
	}
	return out
}

func (h fastHeader) Set(name, value string) { h.req.Header.Set(name, value) }

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// FromHTTP returns the view of a request received by a net/http server (a
// simulator verifying what the proxy sent). body is the content already read
// from r.Body. The scheme is https when the connection used TLS. The view
// has its own copy of the header, so it is meant for Verify: fields set on
// it do not reach r.
func FromHTTP(r *http.Request, body []byte) *Request {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	// net/http moves Host and Content-Length out of the header map; put them
	// back so they can be covered like any other field.
	if r.Host != "" {
		h.Set("Host", r.Host)
	}
	if r.ContentLength > 0 || r.ContentLength == 0 && r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	return &Request{
		Method: r.Method,
		URL:    scheme + "://" + r.Host + r.RequestURI,
		Header: h,
		Body:   body,
	}
}
