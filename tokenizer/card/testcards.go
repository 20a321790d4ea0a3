package card

// testCardTypes is the one table of card numbers in non-test code: the
// funding type of published test cards, so the sandbox can show
// `card_type` for them. It is keyed by the whole PAN, not by its BIN, so no
// real card can ever be labelled from it (a BIN such as 42424242 could be
// issued to a real bank; the whole test PAN is never issued to anyone).
//
// Source: Stripe's "Testing" documentation (docs.stripe.com/testing), which
// labels these brand entries "(debit)" and "(prepaid)" and whose API
// examples show `"funding": "credit"` for 4242 4242 4242 4242. Test cards
// whose funding type is not stated there are deliberately absent (their
// card_type is unknown); do not add entries from guesswork.
//
// When the product gains a BIN database, it replaces this table; until
// then card_type is empty for every real card.
var testCardTypes = map[string]CardType{
	"4242424242424242": CardTypeCredit,  // Visa
	"4000056655665556": CardTypeDebit,   // Visa (debit)
	"5200828282828210": CardTypeDebit,   // Mastercard (debit)
	"5105105105105100": CardTypePrepaid, // Mastercard (prepaid)
}
