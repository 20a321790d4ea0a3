package transactions

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
)

// signedToken is the form of the tokens a buyer's browser carries to
// core-api without a bearer token (a direct integration's completion, a
// 3-D Secure challenge): prefix + "." + base64url(merchant|id|expiry) +
// "." + base64url(HMAC-SHA256 under key, over context and the payload).
// Each kind has its own prefix and context, so that no token of one kind
// is ever one of another.
type signedToken struct {
	prefix, context string
	key             []byte
}

func (k signedToken) sign(payload []byte) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(k.context))
	m.Write(payload)
	return m.Sum(nil)
}

// issue is a token for transaction id of merchant, valid until expires.
func (k signedToken) issue(merchant, id string, expires time.Time) string {
	payload := []byte(merchant + "|" + id + "|" + strconv.FormatInt(expires.Unix(), 10))
	return k.prefix + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(k.sign(payload))
}

// verify checks tok for transaction id at now: the merchant account it was
// issued for, or a *coreapi.CompletionTokenError.
func (k signedToken) verify(id, tok string, now time.Time) (string, error) {
	invalidTok := &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenInvalid}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != k.prefix || len(k.key) == 0 {
		return "", invalidTok
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(parts[1])
	mac, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || !hmac.Equal(mac, k.sign(payload)) {
		return "", invalidTok
	}
	f := bytes.Split(payload, []byte("|"))
	if len(f) != 3 {
		return "", invalidTok
	}
	exp, err := strconv.ParseInt(string(f[2]), 10, 64)
	switch {
	case err != nil:
		return "", invalidTok
	case string(f[1]) != id:
		return "", &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenMismatch}
	case !now.Before(time.Unix(exp, 0)):
		return "", &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenExpired}
	}
	return string(f[0]), nil
}
