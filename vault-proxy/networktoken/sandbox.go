package networktoken

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/payorch/tokenizer/card"
)

// SandboxSchemes are the schemes the sandbox simulator serves.
var SandboxSchemes = []card.Scheme{card.SchemeVisa, card.SchemeMastercard, card.SchemeAmex, card.SchemeDiscover}

// Sandbox is the sandbox token service provider: a simulator shipped with
// the product (a product feature, like the mock connectors), registered in
// the development and sandbox environments and never in production. It
// behaves as a TSP does, through the same Provider interface a Visa or
// Mastercard token service connector implements:
//
//   - Provision returns a fresh random token value (DPAN) that is
//     Luhn-valid, has the card's length and lies in a token BIN range of the
//     card's scheme (visa 489537..., mastercard 520473..., amex 374501...,
//     discover 601156...), so processors and validators treat it as a card
//     number of that scheme; it is never the card number. Its expiry is
//     three years from the month of provisioning, independent of the card's.
//     The token reference is "sbx_<scheme>_<32 hex>".
//   - The test cards with a NetworkTokenRefusal in the product's one
//     table of test cards (tokenizer/card testcards.go: one Visa card
//     refused as tsp_declined, one Mastercard card as card_not_eligible)
//     are refused with a *ProvisioningError.
//   - Cryptogram returns 20 random bytes in standard base64 (28 characters,
//     the size of a TAVV or UCAF cryptogram), fresh on every call, with the
//     ECI a non-authenticated e-commerce token payment carries (visa, amex,
//     discover 07; mastercard 00).
//   - Suspend, Resume and Delete accept any reference the sandbox issued.
//
// The simulator keeps no state: the vault database is the record of each
// token's status (Service refuses cryptograms for tokens that are not
// active before asking the provider), so it works unchanged across restarts
// and several vault-proxy instances.
type Sandbox struct {
	// Now is the clock for token expiry (default time.Now).
	Now func() time.Time
}

// sandboxRange is a token BIN range of one scheme.
type sandboxRange struct {
	prefix string
	eci    string
}

var sandboxRanges = map[card.Scheme]sandboxRange{
	card.SchemeVisa:       {prefix: "489537", eci: "07"},
	card.SchemeMastercard: {prefix: "520473", eci: "00"},
	card.SchemeAmex:       {prefix: "374501", eci: "07"},
	card.SchemeDiscover:   {prefix: "601156", eci: "07"},
}

const sandboxRefPrefix = "sbx_"

// ErrUnknownReference is returned for a token reference the provider did not
// issue.
var ErrUnknownReference = errors.New("networktoken: unknown token reference")

// Name implements Provider.
func (s *Sandbox) Name() string { return "sandbox" }

// Provision implements Provider.
func (s *Sandbox) Provision(_ context.Context, d CardData) ([]byte, card.Expiry, string, error) {
	if tc, ok := card.LookupTestCard(d.Number); ok && tc.NetworkTokenRefusal != "" {
		return nil, card.Expiry{}, "", sandboxRefusal(tc.NetworkTokenRefusal)
	}
	rng, ok := sandboxRanges[d.Scheme]
	if !ok || card.DetectScheme(d.Number) != d.Scheme {
		return nil, card.Expiry{}, "", &ProvisioningError{Reason: ReasonSchemeNotSupported, Message: "the sandbox token service does not serve this card's scheme"}
	}
	n := len(d.Number)
	if n < 13 || n > 19 {
		return nil, card.Expiry{}, "", &ProvisioningError{Reason: ReasonNotEligible, Message: "the card number has an unusual length"}
	}
	var token []byte
	for {
		t, err := randomPAN(rng.prefix, n)
		if err != nil {
			return nil, card.Expiry{}, "", err
		}
		if !bytes.Equal(t, d.Number) {
			token = t
			break
		}
	}
	ref := make([]byte, 16)
	if _, err := rand.Read(ref); err != nil {
		clear(token)
		return nil, card.Expiry{}, "", err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now().UTC()
	exp := card.Expiry{Month: int(t.Month()), Year: t.Year() + 3}
	return token, exp, sandboxRefPrefix + string(d.Scheme) + "_" + hex.EncodeToString(ref), nil
}

// randomPAN is prefix, random digits and a Luhn check digit, n digits long.
func randomPAN(prefix string, n int) ([]byte, error) {
	b := make([]byte, n)
	copy(b, prefix)
	buf := make([]byte, 32)
	i := len(prefix)
	for i < n-1 {
		if _, err := rand.Read(buf); err != nil {
			return nil, err
		}
		for _, r := range buf {
			if r >= 250 || i >= n-1 { // 250 = 25*10: no modulo bias
				continue
			}
			b[i] = '0' + r%10
			i++
		}
	}
	for d := byte('0'); d <= '9'; d++ {
		b[n-1] = d
		if card.Luhn(b) {
			return b, nil
		}
	}
	return nil, errors.New("networktoken: no Luhn check digit") // unreachable
}

// Cryptogram implements Provider.
func (s *Sandbox) Cryptogram(_ context.Context, ref string) ([]byte, string, error) {
	scheme, err := sandboxScheme(ref)
	if err != nil {
		return nil, "", err
	}
	raw := make([]byte, 20)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(raw)))
	base64.StdEncoding.Encode(out, raw)
	return out, sandboxRanges[scheme].eci, nil
}

// Suspend implements Provider.
func (s *Sandbox) Suspend(_ context.Context, ref string) error {
	_, err := sandboxScheme(ref)
	return err
}

// Resume implements Provider.
func (s *Sandbox) Resume(_ context.Context, ref string) error {
	_, err := sandboxScheme(ref)
	return err
}

// Delete implements Provider.
func (s *Sandbox) Delete(_ context.Context, ref string) error {
	_, err := sandboxScheme(ref)
	return err
}

// sandboxScheme checks a reference the sandbox issued and returns its scheme.
func sandboxScheme(ref string) (card.Scheme, error) {
	rest, ok := strings.CutPrefix(ref, sandboxRefPrefix)
	scheme, id, ok2 := strings.Cut(rest, "_")
	if _, known := sandboxRanges[card.Scheme(scheme)]; !ok || !ok2 || !known || len(id) != 32 {
		return "", ErrUnknownReference
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", ErrUnknownReference
	}
	return card.Scheme(scheme), nil
}

// sandboxRefusal is the error of a test card the sandbox refuses.
func sandboxRefusal(reason string) *ProvisioningError {
	msg := "the token service provider declined to tokenize the card"
	if reason == ReasonNotEligible {
		msg = "the card is not eligible for network tokenization"
	}
	return &ProvisioningError{Reason: reason, Message: msg}
}
