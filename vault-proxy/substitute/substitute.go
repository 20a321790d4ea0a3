// Package substitute finds {{ NAME_X }} placeholders in a request body and
// fills them with card data, escaping each value for the body's encoding so
// that substitution never breaks the document: JSON-escaped in JSON, XML-
// escaped in XML, percent-encoded in a form, raw in plain text.
//
// Grammar: "{{", optional spaces, NAME "_" INDEX, optional spaces, "}}".
// Anything between double braces that looks like an identifier
// ([A-Za-z0-9_]+) is a placeholder and must be known; other brace pairs
// (a template language's "{{ user.name }}") are left as text. INDEX is
// 1-based into the request's payment-method list.
//
// The parser reads the body once and records offsets; Render appends to a
// caller-owned buffer so the caller can zero it after sending.
package substitute

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/payorch/shared/jsonenc"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/tokenizer/card"
)

// Field is the card datum a placeholder asks for.
type Field int

const (
	CardNumber Field = iota + 1
	CardExpiry
	NetworkToken
	NetworkTokenExpiry
	Cryptogram
	SecurityCode
	GiftCardPIN
)

func (f Field) String() string {
	switch f {
	case CardNumber:
		return "card number"
	case CardExpiry:
		return "card expiry"
	case NetworkToken:
		return "network token"
	case NetworkTokenExpiry:
		return "network token expiry"
	case Cryptogram:
		return "cryptogram"
	case SecurityCode:
		return "security code"
	case GiftCardPIN:
		return "gift card PIN"
	}
	return "unknown"
}

// NeedsNetworkToken reports whether the field is provisioned through a
// token service (and so may fail, and may have an _OR_EMPTY_STRING form).
func (f Field) NeedsNetworkToken() bool {
	return f == NetworkToken || f == NetworkTokenExpiry || f == Cryptogram
}

// Placeholder is one parsed {{ ... }}.
type Placeholder struct {
	Name       string // e.g. CARD_EXPIRATION_DATE_YYYY_2 (no braces, no spaces)
	Field      Field
	Format     card.ExpiryFormat // for the expiry fields
	OrEmpty    bool              // _OR_EMPTY_STRING: "" instead of an error when provisioning fails
	borrowed   bool              // Name still points into the body
	Index      int               // 1-based
	start, end int               // byte offsets of the whole "{{ ... }}"
}

// Error is a placeholder problem, reported before anything is sent.
type Error struct {
	Placeholder string // the name, safe to show: it is never card data
	Code        string // unknown_placeholder, index_out_of_range, placeholder_not_allowed, value_unavailable, too_many_placeholders
	Message     string
}

func (e *Error) Error() string { return e.Message }

// MaxPlaceholders bounds the work one body can ask for.
const MaxPlaceholders = 1000

// Template is a parsed body.
type Template struct {
	body []byte
	// The placeholders are inline[:n], or more when inline cannot hold
	// them. inline holds those of the usual body without an allocation;
	// it is not referred to by a slice in the Template, which would make
	// every Template escape to the heap.
	n      int
	inline [4]Placeholder
	more   []Placeholder
}

// Options decide which fields a caller may use.
type Options struct {
	// AllowSecurityCode enables CARD_SECURITY_CODE_X; only detokenized
	// authorization calls from core-api set it, never /vault-forward.
	AllowSecurityCode bool
	// AllowGiftCards enables GIFT_CARD_PIN_X, and the gift-card tokens
	// that CARD_NUMBER_X may name: only detokenized gift card calls from
	// core-api (a redemption or a balance) set it, never /vault-forward.
	AllowGiftCards bool
}

// allowed reports whether opts let a caller use field.
func (opts Options) allowed(f Field) bool {
	switch f {
	case SecurityCode:
		return opts.AllowSecurityCode
	case GiftCardPIN:
		return opts.AllowGiftCards
	}
	return true
}

// Parse scans body for placeholders. It keeps a reference to body.
//
// Parse is small enough to be inlined, so that a caller that keeps the
// Template to itself (as forward.Send does) keeps it on its stack.
func Parse(body []byte, opts Options) (*Template, error) {
	t := new(Template)
	if err := t.parse(body, opts); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Template) parse(body []byte, opts Options) error {
	t.body = body
	i := 0
	for {
		j := indexOpen(body[i:])
		if j < 0 {
			t.ownNames()
			return nil
		}
		start := i + j
		inner, end, ok := placeholderAt(body, start)
		if !ok {
			// Not ours: leave it as text, and look again one byte on, so
			// that "{{{ CARD_NUMBER_1 }}}" is the placeholder in braces.
			i = start + 1
			continue
		}
		// The name is read in place; ownNames gives the placeholders
		// their own copy once the body is read.
		name := unsafe.String(&inner[0], len(inner))
		k, idx, ok := knownName(name)
		if !ok || !opts.allowed(k.field) {
			_, err := parseName(string(inner), opts)
			return err
		}
		if len(t.Placeholders()) == MaxPlaceholders {
			return &Error{Code: "too_many_placeholders", Message: fmt.Sprintf("more than %d placeholders", MaxPlaceholders)}
		}
		// Filled where it is kept: a Placeholder is large to copy.
		p := t.next(start)
		k.fill(p, name, idx)
		p.start, p.end = start, end
		i = end
	}
}

// indexOpen is bytes.Index(b, open), for bodies with many single "{" and
// few "{{" (JSON): it checks the byte after each "{" in place, where
// bytes.Index calls a comparison.
func indexOpen(b []byte) int {
	for i := 0; ; i++ {
		j := bytes.IndexByte(b[i:], '{')
		if j < 0 {
			return -1
		}
		if i += j; i+1 < len(b) && b[i+1] == '{' {
			return i
		}
	}
}

// next adds a placeholder, the one that starts at start, and returns it to
// be filled. When the inline storage is full, the rest of the body is
// counted for more, in one allocation: every "{{" from start on is taken
// for a placeholder.
func (t *Template) next(start int) *Placeholder {
	if t.more == nil {
		if t.n < len(t.inline) {
			t.n++
			return &t.inline[t.n-1]
		}
		n := min(t.n+bytes.Count(t.body[start:], open), MaxPlaceholders)
		t.more = append(make([]Placeholder, 0, n), t.inline[:t.n]...)
	}
	t.more = append(t.more, Placeholder{})
	return &t.more[len(t.more)-1]
}

// placeholderAt reads "{{", spaces, a name, spaces and "}}" at body[start:],
// the name being an identifier ([A-Za-z0-9_]+, at most maxNameLen bytes) and
// the spaces those bytes.TrimSpace trims. It returns the name and the end of
// the "}}". That is the first "}}" after the "{{", with no "{{" between:
// neither spaces nor names hold braces. The bytes it reads after the "{{"
// hold no "{" but the last, so the reads of two calls hardly overlap, and
// parsing stays linear.
func placeholderAt(body []byte, start int) (name []byte, end int, ok bool) {
	i := skipSpace(body, start+len(open))
	j := i
	for j < len(body) && j-i <= maxNameLen && isNameByte(body[j]) {
		j++
	}
	k := skipSpace(body, j)
	if j == i || j-i > maxNameLen || !bytes.HasPrefix(body[k:], close) {
		return nil, 0, false
	}
	return body[i:j], k + len(close), true
}

// maxNameLen bounds a placeholder's name, and so the error that repeats it.
const maxNameLen = 128

func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// skipSpace returns the offset of the first byte at or after i that does
// not start a space, as bytes.TrimSpace knows them: ASCII ones, and the
// Unicode ones of valid UTF-8.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case c == ' ' || c >= '\t' && c <= '\r':
			i++
		case c < utf8.RuneSelf:
			return i
		default:
			r, size := utf8.DecodeRune(b[i:])
			if !unicode.IsSpace(r) {
				return i
			}
			i += size
		}
	}
	return i
}

// ownNames copies the names that still point into the body into one string
// they then share: a name outlives the body (the audit record, an error),
// and one allocation serves them all. The usual names come from kinds, and
// need none.
func (t *Template) ownNames() {
	ph := t.Placeholders()
	n := 0
	for _, p := range ph {
		if p.borrowed {
			n += len(p.Name)
		}
	}
	if n == 0 {
		return
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range ph {
		if p.borrowed {
			sb.WriteString(p.Name)
		}
	}
	all := sb.String()
	for i, p := range ph {
		if p.borrowed {
			ph[i].Name, all = all[:len(p.Name)], all[len(p.Name):]
			ph[i].borrowed = false
		}
	}
}

var open, close = []byte("{{"), []byte("}}")

// parseName understands NAME_INDEX where NAME is a base name, then an
// optional expiry variant word, then an optional OR_EMPTY_STRING, e.g.
// CARD_NETWORK_TOKEN_EXPIRATION_DATE_MM_OR_EMPTY_STRING_1.
func parseName(name string, opts Options) (Placeholder, error) {
	p, ok := parseKnownName(name)
	if !ok {
		name = shown(name)
		return Placeholder{}, &Error{Placeholder: name, Code: "unknown_placeholder", Message: "unknown placeholder " + name}
	}
	if !opts.allowed(p.Field) {
		name = shown(name)
		return Placeholder{}, &Error{Placeholder: name, Code: "placeholder_not_allowed", Message: "placeholder " + name + " is not allowed here"}
	}
	return p, nil
}

// shown is how an error names a placeholder. The name is the caller's
// text, and errors never repeat a card number: not where a name belongs
// ("{{ <card number>_1 }}", grouped with "_" or not), nor as the index of a
// known name ("{{ CARD_NUMBER_<card number> }}").
func shown(name string) string {
	if panscan.InIdentifier(name) {
		return panscan.Replacement
	}
	return name
}

// parseKnownName is parseName without the errors, which it would otherwise
// build for every placeholder of every request.
func parseKnownName(name string) (Placeholder, bool) {
	var p Placeholder
	k, idx, ok := knownName(name)
	if ok {
		k.fill(&p, name, idx)
	}
	return p, ok
}

// knownName finds the kind and the index of a name the grammar knows.
func knownName(name string) (k *kind, idx int, ok bool) {
	cut := strings.LastIndexByte(name, '_')
	if cut <= 0 {
		return nil, 0, false
	}
	if k = kindNamed(name[:cut]); k == nil {
		return nil, 0, false
	}
	idx, err := strconv.Atoi(name[cut+1:])
	if err != nil || idx < 0 || name[cut+1] == '+' {
		return nil, 0, false
	}
	return k, idx, true
}

// fill makes p the placeholder name, of kind k and with the index idx. Its
// name is name itself, or the same text from k when k has it.
func (k *kind) fill(p *Placeholder, name string, idx int) {
	p.Name, p.borrowed = name, true
	if idx < len(k.names) && len(name) == len(k.names[idx]) {
		p.Name, p.borrowed = k.names[idx], false // the same text: not "_01"
	}
	p.Field, p.Format, p.OrEmpty, p.Index = k.field, k.format, k.orEmpty, idx
}

// A kind is a placeholder name without its index, e.g.
// CARD_NETWORK_TOKEN_EXPIRATION_DATE_MM_OR_EMPTY_STRING: a base name, then
// for the expiry fields an optional variant word, then for the network
// token fields an optional OR_EMPTY_STRING.
type kind struct {
	name    string
	field   Field
	format  card.ExpiryFormat
	orEmpty bool
	// names are the kind's full names for the indexes 0 to 9: those of
	// the usual body, which its placeholders then share rather than copy.
	names [10]string
}

// kinds are the kinds the grammar knows, by the length of their names. They
// are built once, and never changed. Finding a name among the one or two of
// its length is cheaper than taking it apart, or than hashing it.
var kinds = knownKinds()

func kindNamed(name string) *kind {
	if len(name) >= len(kinds) {
		return nil
	}
	for _, k := range kinds[len(name)] {
		if k.name == name {
			return k
		}
	}
	return nil
}

// expiryVariants are the variant words of the expiry fields
// (docs/vault-forward.md, "Placeholders"): every ExpiryFormat but the
// default MM/YY, which is the name without a variant.
var expiryVariants = []card.ExpiryFormat{card.ExpiryM, card.ExpiryMM, card.ExpiryYY, card.ExpiryYYYY}

func knownKinds() [][]*kind {
	var byLen [][]*kind
	add := func(k *kind) {
		if n := len(k.name); n >= len(byLen) {
			byLen = append(byLen, make([][]*kind, n+1-len(byLen))...)
		}
		byLen[len(k.name)] = append(byLen[len(k.name)], k)
	}
	for _, b := range bases {
		formats := []card.ExpiryFormat{""}
		if b.expiry {
			formats = append(formats, expiryVariants...)
		}
		for _, f := range formats {
			name := b.name
			if f != "" {
				name += "_" + string(f)
			}
			add(newKind(name, b.field, f, false))
			if b.field.NeedsNetworkToken() {
				add(newKind(name+"_OR_EMPTY_STRING", b.field, f, true))
			}
		}
	}
	return byLen
}

func newKind(name string, field Field, format card.ExpiryFormat, orEmpty bool) *kind {
	k := &kind{name: name, field: field, format: format, orEmpty: orEmpty}
	for i := range k.names {
		k.names[i] = name + "_" + strconv.Itoa(i)
	}
	return k
}

var bases = []struct {
	name   string
	field  Field
	expiry bool
}{
	{"CARD_NETWORK_TOKEN_EXPIRATION_DATE", NetworkTokenExpiry, true},
	{"CARD_NETWORK_TOKEN", NetworkToken, false},
	{"CARD_EXPIRATION_DATE", CardExpiry, true},
	{"CARD_NUMBER", CardNumber, false},
	{"CARD_CRYPTOGRAM", Cryptogram, false},
	{"CARD_SECURITY_CODE", SecurityCode, false},
	{"GIFT_CARD_PIN", GiftCardPIN, false},
}

// Placeholders lists what the body asks for, in order.
func (t *Template) Placeholders() []Placeholder {
	if t.more != nil {
		return t.more
	}
	return t.inline[:t.n]
}

// CheckIndexes verifies every index is within 1..n.
func (t *Template) CheckIndexes(n int) error {
	for _, p := range t.Placeholders() {
		if p.Index < 1 || p.Index > n {
			name, index := shown(p.Name), strconv.Itoa(p.Index)
			if name == panscan.Replacement || panscan.InIdentifier(index) {
				name, index = panscan.Replacement, panscan.Replacement
			}
			return &Error{Placeholder: name, Code: "index_out_of_range",
				Message: fmt.Sprintf("placeholder %s: index %s is outside 1..%d", name, index, n)}
		}
	}
	return nil
}

// Encoding is how a value is escaped into the body.
type Encoding int

const (
	Plain Encoding = iota
	JSON
	XML
	Form
)

// EncodingFor picks the escaping from a Content-Type header value. Only
// the media type decides; its parameters are not parsed, so a malformed
// parameter (application/json; charset) still gets JSON escaping rather
// than raw insertion into what is a JSON document.
func EncodingFor(contentType string) Encoding {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	switch {
	case strings.EqualFold(mt, "application/json") || hasSuffixFold(mt, "+json"):
		return JSON
	case strings.EqualFold(mt, "application/xml") || strings.EqualFold(mt, "text/xml") || hasSuffixFold(mt, "+xml"):
		return XML
	case strings.EqualFold(mt, "application/x-www-form-urlencoded"):
		return Form
	}
	return Plain
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// Resolver returns the value for one placeholder. It may return (nil, err)
// with an *Error for a value that cannot be had.
type Resolver func(p Placeholder) ([]byte, error)

// Render appends the body with every placeholder replaced to dst. When dst
// must move to a larger array, the old one is cleared first: what was
// rendered into it may hold card numbers, and a dropped array would keep
// them in memory until it happened to be reused. (The caller clears the
// array Render returns.)
func (t *Template) Render(dst []byte, enc Encoding, resolve Resolver) ([]byte, error) {
	prev := 0
	for _, p := range t.Placeholders() {
		dst = growClearing(dst, p.start-prev)
		dst = append(dst, t.body[prev:p.start]...)
		v, err := resolve(p)
		if err != nil {
			return dst, err
		}
		dst = growClearing(dst, maxEscapedLen*len(v))
		dst = appendEscaped(dst, v, enc)
		prev = p.end
	}
	dst = growClearing(dst, len(t.body)-prev)
	return append(dst, t.body[prev:]...), nil
}

// maxEscapedLen bounds how many bytes escaping writes per input byte: six
// for JSON's \u00XX and XML's &quot;, three for a form's %XX.
const maxEscapedLen = 6

// growClearing returns dst with room for n more bytes, so that the appends
// that follow do not move it. Moving it, it clears the old array.
func growClearing(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	bigger := make([]byte, len(dst), 2*cap(dst)+n)
	copy(bigger, dst)
	clear(dst[:cap(dst)])
	return bigger
}

func appendEscaped(dst, v []byte, enc Encoding) []byte {
	switch enc {
	case JSON:
		return appendJSON(dst, v)
	case XML:
		return appendXML(dst, v)
	case Form:
		return appendForm(dst, v)
	}
	return append(dst, v...)
}

// appendForm escapes v as url.QueryEscape does, without the two string
// copies of the value (a card number) that calling it would leave behind.
func appendForm(dst, v []byte) []byte {
	const upperHex = "0123456789ABCDEF"
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~':
			dst = append(dst, c)
		case c == ' ':
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&0xf])
		}
	}
	return dst
}

const hex = "0123456789abcdef"

// appendJSON escapes v for the inside of a JSON string. The runs of bytes
// that need no escaping (the whole of a card number) are copied at once.
func appendJSON(dst, v []byte) []byte {
	for {
		n := 0
		for n < len(v) && jsonenc.Plain(v[n]) {
			n++
		}
		dst = append(dst, v[:n]...)
		if v = v[n:]; len(v) == 0 {
			return dst
		}
		dst, n = appendJSONEscape(dst, v)
		v = v[n:]
	}
}

// appendJSONEscape appends the first byte or rune of v, one that jsonenc.Plain
// does not pass, escaped, and returns how many bytes of v it took.
func appendJSONEscape(dst, v []byte) ([]byte, int) {
	switch c := v[0]; {
	case c == '"' || c == '\\':
		return append(dst, '\\', c), 1
	case c == '\n':
		return append(dst, '\\', 'n'), 1
	case c == '\r':
		return append(dst, '\\', 'r'), 1
	case c == '\t':
		return append(dst, '\\', 't'), 1
	case c < utf8.RuneSelf: // the other controls, '<', '>', '&'
		return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf]), 1
	}
	r, size := utf8.DecodeRune(v)
	if r == utf8.RuneError && size == 1 {
		return append(dst, `\ufffd`...), 1
	}
	return append(dst, v[:size]...), size
}

func appendXML(dst, v []byte) []byte {
	for _, c := range v {
		switch c {
		case '&':
			dst = append(dst, "&amp;"...)
		case '<':
			dst = append(dst, "&lt;"...)
		case '>':
			dst = append(dst, "&gt;"...)
		case '"':
			dst = append(dst, "&quot;"...)
		case '\'':
			dst = append(dst, "&apos;"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
