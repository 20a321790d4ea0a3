package logging

import "strings"

// IsSensitiveKey reports whether an attribute (or configuration variable)
// named key probably holds a secret or card data, so that its value must not
// be written anywhere. It errs towards redacting. Matching is on the key
// normalised to ASCII lower case without '_', '-', '.' and spaces, so
// "X-Api-Key", "api_key" and "apiKey" all contain "apikey".
//
// The word lists are switch statements rather than slice variables: no
// package state a caller could modify, and no allocation on the hot path.
func IsSensitiveKey(key string) bool {
	if key == "" {
		return false
	}
	var buf [64]byte
	norm := string(normalizeKey(buf[:0], key))
	switch {
	case norm == "cvvresponsecode", norm == "cvcresponsecode", norm == "cvvresult",
		norm == "cvcresult", norm == "cvvcheck", norm == "cvccheck":
		// Results about a secret, not the secret: the processor's CVV match
		// code is what one needs in a log to understand a decline.
		return false
	case strings.HasSuffix(norm, "publickey"), strings.HasSuffix(norm, "idempotencykey"):
		return false
	case strings.HasSuffix(norm, "key"):
		// api_key, hmac_key, data_key, signing_key, and the plain "key" of
		// an hmac authentication method.
		return true
	case strings.HasSuffix(norm, "authorization"):
		// The HTTP headers, but not authorization_code or authorization_id,
		// which in payments name the result of a card authorisation.
		return true
	case norm == "number":
		// A card body names the PAN plain "number"; order_number or
		// phone_number are ordinary data, whose values are still scanned for
		// card numbers like any other.
		return true
	}
	return hasSensitiveFragment(norm) || hasSensitiveSegment(key)
}

// hasSensitiveFragment looks for words that redact a key wherever they occur
// in it. They are long or unusual enough that a substring match has few
// false positives.
func hasSensitiveFragment(norm string) bool {
	for i := 0; i < len(norm); i++ {
		rest := norm[i:]
		var hit bool
		switch norm[i] {
		case 'a':
			hit = hasAnyPrefix(rest, "apikey", "accountnumber")
		case 'b':
			hit = hasAnyPrefix(rest, "bearer")
		case 'c':
			hit = hasAnyPrefix(rest, "cvv", "cvc", "cookie", "credential", "cardnumber")
		case 'p':
			hit = hasAnyPrefix(rest, "passw", "passphrase", "privatekey", "pinblock")
		case 's':
			hit = hasAnyPrefix(rest, "secret", "securitycode")
		case 't':
			hit = hasAnyPrefix(rest, "token", "trackdata", "track1", "track2")
		}
		if hit {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func normalizeKey(dst []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// hasSensitiveSegment splits key into words at non-alphanumeric bytes and at
// camelCase boundaries ("cardPAN" -> card, PAN; "PANHash" -> PAN, Hash).
func hasSensitiveSegment(key string) bool {
	start := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) && !segmentBreak(key, i) {
			continue
		}
		if i > start && segmentIsSensitive(key[start:i]) {
			return true
		}
		start = i
		if i < len(key) && !isAlnum(key[i]) {
			start = i + 1
		}
	}
	return false
}

func segmentBreak(key string, i int) bool {
	c := key[i]
	if !isAlnum(c) {
		return true
	}
	if i == 0 || !isUpper(c) {
		return false
	}
	prev := key[i-1]
	if isLower(prev) || isDigitByte(prev) {
		return true
	}
	// "PANHash": break before the H because a lower-case letter follows.
	return isUpper(prev) && i+1 < len(key) && isLower(key[i+1])
}

func segmentIsSensitive(seg string) bool {
	// Whole words only: as substrings they are everywhere ("pan" in
	// "company", "pin" in "shipping").
	if len(seg) != 3 {
		return false
	}
	var low [3]byte
	for i := range low {
		low[i] = seg[i] | 0x20 // ASCII letters and digits only reach here
	}
	switch string(low[:]) {
	case "pan", "pin", "csc", "cvn":
		return true
	}
	return false
}

func isUpper(c byte) bool     { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool     { return 'a' <= c && c <= 'z' }
func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool     { return isUpper(c) || isLower(c) || isDigitByte(c) }
