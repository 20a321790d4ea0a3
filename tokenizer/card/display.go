package card

// CardType is how a card is funded: the payment method's
// `details.card_type`. The zero value ("") means unknown.
type CardType string

// Card types. CardTypeUnknown is "" so that an unknown type can be left
// out of a response or written as null.
const (
	CardTypeUnknown CardType = ""
	CardTypeCredit  CardType = "credit"
	CardTypeDebit   CardType = "debit"
	CardTypePrepaid CardType = "prepaid"
)

// Display is what may be shown of a card and stored outside the PCI zone:
// the payment method's `scheme`, `label`, `details.bin` and
// `details.card_type` (docs/api-conventions.md, "Payment methods"). It
// holds no secret.
type Display struct {
	Scheme   Scheme   // Number.Scheme
	Label    string   // Number.Last4
	BIN      string   // Number.BIN: first 8 digits for PANs of 16+, else 6
	CardType CardType // CardTypeUnknown unless listed in testCards
}

// Display returns the displayable parts of n; the zero Display (with
// Scheme SchemeUnknown) when n is empty.
func (n Number) Display() Display {
	if n.IsZero() {
		return Display{Scheme: SchemeUnknown}
	}
	return Display{
		Scheme:   n.Scheme(),
		Label:    n.Last4(),
		BIN:      n.BIN(),
		CardType: n.CardType(),
	}
}

// CardType is the card's funding type when it is known, else
// CardTypeUnknown. The product has no BIN database, so today it is known
// only for the published test cards in testCards.
func (n Number) CardType() CardType {
	if n.IsZero() {
		return CardTypeUnknown
	}
	return testCards[string(n.Reveal())].Type // no allocation: the compiler does not copy for a map lookup
}
