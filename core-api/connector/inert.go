package connector

import "encoding/json"

// inertJSON is JSON a connector places in a detokenized request's body
// beside its own placeholders: the merchant's text (a cart item's name,
// say), which must reach the processor as written and never be read by
// vault-proxy as a placeholder of its own, to be filled with card data
// or refused as unknown.
type inertJSON json.RawMessage

// MarshalJSON gives the bytes as they are.
func (j inertJSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// marshalInert is v as JSON with every brace inside a string written as
// its \u escape: the same text to any JSON reader, and no "{{" for
// vault-proxy's substitution to find (JSON's own syntax never writes
// "{{": an object's first member is a key).
func marshalInert(v any) (inertJSON, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw))
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString && c == '{':
			out = append(out, `\u007b`...)
			continue
		case inString && c == '}':
			out = append(out, `\u007d`...)
			continue
		}
		out = append(out, c)
	}
	return out, nil
}
