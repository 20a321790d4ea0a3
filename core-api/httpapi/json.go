package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/pgtext"
	"github.com/payorch/shared/strictjson"
	"github.com/payorch/shared/zone"
)

// MaxBodyBytes bounds a JSON request body.
const MaxBodyBytes = 1 << 20

// DecodeStrict reads r's JSON body into dst (a pointer), strictly:
//
//   - Content-Type must be application/json (or a +json type), charset
//     utf-8 if given, else 415 unsupported_media_type;
//   - a body over MaxBodyBytes is 413 too_large;
//   - then DecodeStrictBytes.
func DecodeStrict(r *http.Request, dst any) error {
	if err := apierror.CheckJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.Body == nil {
		return strictjson.ErrEmpty
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return DecodeStrictBytes(body, dst)
}

// readBody reads r's body, at most MaxBodyBytes (413 too_large beyond).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, errTooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge
		}
		return nil, apierror.BadRequest("could not read the request body")
	}
	if len(body) > MaxBodyBytes {
		return nil, errTooLarge
	}
	return body, nil
}

// DecodeStrictBytes is DecodeStrict for a body already read: the rules of
// shared/strictjson (unknown fields at any depth, duplicates, types, null,
// every problem at once with its pointer), after core-api's own rules for
// the text of any body, which refuse it first: no key or string holds
// U+0000 (PostgreSQL's text and jsonb cannot store it) or a card number
// (core-api stores none in any field, whatever a client puts where).
func DecodeStrictBytes(body []byte, dst any) error {
	return strictjson.Decode(body, dst, &textRules)
}

var errTooLarge = apierror.TooLarge("request body exceeds 1 MiB")

// textRules are core-api's rules for the text of a body. A key holding a
// card number is reported at its object's pointer: the key's own pointer
// would repeat it.
var textRules = strictjson.Screen{
	Key: func(r *strictjson.Report, key, objectPtr, memberPtr string) {
		if !pgtext.Storable(key) {
			r.Add(memberPtr, nulMessage, nulType)
		}
		if panscan.Contains(key) {
			r.Add(objectPtr, "a field name "+cardMessage, cardType)
		}
	},
	String: func(r *strictjson.Report, key, value, ptr string) {
		if !pgtext.Storable(value) {
			r.Add(ptr, nulMessage, nulType)
		}
		if zone.HoldsCardNumber(key, value) {
			r.Add(ptr, cardMessage, cardType)
		}
	},
}

const (
	nulMessage  = "must not contain the NUL character (U+0000)"
	nulType     = "value_error.str.encoding"
	cardMessage = "looks like a card number; card data are accepted only by vault-proxy"
	cardType    = "value_error.card_data"
)
