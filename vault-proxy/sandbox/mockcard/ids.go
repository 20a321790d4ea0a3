package mockcard

import (
	"crypto/rand"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/payorch/shared/cardscheme"
	"github.com/payorch/shared/logging/panscan"
)

// newID is prefix and 26 random base32 characters. An id goes into
// answers that vault-proxy searches for card numbers, and a run of digits
// in it could be one: such an id is drawn again.
func newID(prefix string) string {
	for {
		id := prefix + strings.ToLower(rand.Text())
		if !panscan.Contains(id) {
			return id
		}
	}
}

// visaIDSpan draws 15-digit numbers without a leading zero.
var visaIDSpan = big.NewInt(9e14)

// schemeTransactionID is the id the card network gives an approved
// authorization, shaped as the scheme's: Mastercard's trace id (a network
// code, a 6-character Banknet reference, the settlement date as MMDD),
// 15 digits for Visa and every other scheme. One in ten 15-digit numbers
// passes the Luhn check, which makes vault-proxy mask it in the answer
// core-api gets, and some of those are card numbers of a known scheme,
// which core-api refuses (zone.DigitFields): such an id is drawn again.
func schemeTransactionID(s cardscheme.Scheme, now time.Time) string {
	if s == cardscheme.Mastercard {
		return "MCC" + rand.Text()[:6] + now.UTC().Format("0102")
	}
	for {
		n, err := rand.Int(rand.Reader, visaIDSpan)
		if err != nil {
			panic(err) // crypto/rand does not fail (Go 1.24+)
		}
		id := strconv.FormatInt(n.Int64()+1e14, 10)
		if !panscan.Contains(id) {
			return id
		}
	}
}
