package card

import (
	"iter"
	"maps"
)

// TestCard is what the product's sandbox knows of one published test card.
type TestCard struct {
	// Type is the funding type the card's publisher states; CardTypeUnknown
	// where it states none.
	Type CardType
	// NetworkTokenRefusal, when set, is the reason the sandbox token
	// service provider (vault-proxy/networktoken.Sandbox) refuses to
	// provision the card ("tsp_declined", "card_not_eligible"), so
	// merchants and tests can exercise a failed provisioning.
	NetworkTokenRefusal string
	// ProcessorDecline, when set, is the raw response code ("05", "51")
	// with which the sandbox card processor (vault-proxy/sandbox/mockcard)
	// declines every authorization of the card, whatever its amount.
	ProcessorDecline string
}

// testCards is the one table of card numbers in non-test code. Every
// simulator that treats a test card specially reads it here; nothing else
// writes a card number outside tests.
//
// It is keyed by the whole PAN, never by a BIN, so no real card can be
// labelled or refused from it (a BIN such as 42424242 could be issued to a
// real bank; the whole test PAN is never issued to anyone).
//
// Sources: funding types from Stripe's "Testing" documentation
// (docs.stripe.com/testing), which labels these brand entries "(debit)"
// and "(prepaid)" and whose API examples show `"funding": "credit"` for
// 4242 4242 4242 4242; test cards whose funding type is not stated there
// have none here (do not add entries from guesswork). The refusing cards
// are the sandbox's own (docs/network-tokens.md), one per scheme the
// sandbox serves that has a refusal. The cards the sandbox card processor
// declines are Stripe's "generic decline" and "insufficient funds decline"
// cards of the same page, declined with the ISO 8583 response codes of
// those reasons (docs/sandbox/mock-card.md).
//
// When the product gains a BIN database, it replaces the funding types;
// until then card_type is empty for every real card.
var testCards = map[string]TestCard{
	"4242424242424242": {Type: CardTypeCredit},                     // Visa
	"4000056655665556": {Type: CardTypeDebit},                      // Visa (debit)
	"5200828282828210": {Type: CardTypeDebit},                      // Mastercard (debit)
	"5105105105105100": {Type: CardTypePrepaid},                    // Mastercard (prepaid)
	"4000000000000119": {NetworkTokenRefusal: "tsp_declined"},      // Visa
	"5200000000000007": {NetworkTokenRefusal: "card_not_eligible"}, // Mastercard
	"4000000000000002": {ProcessorDecline: "05"},                   // Visa (generic decline: do not honour)
	"4000000000009995": {ProcessorDecline: "51"},                   // Visa (insufficient funds)
}

// LookupTestCard returns the table's entry for pan, a card number's digits.
// It does not copy pan.
func LookupTestCard(pan []byte) (TestCard, bool) {
	tc, ok := testCards[string(pan)]
	return tc, ok
}

// TestCards lists the table, for the tests of the simulators that use it.
func TestCards() iter.Seq2[string, TestCard] { return maps.All(testCards) }
