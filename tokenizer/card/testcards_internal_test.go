package card

import "testing"

// TestTestCards keeps the table honest: every key is a valid PAN of a
// known scheme, and every entry says something.
func TestTestCards(t *testing.T) {
	for pan, tc := range TestCards() {
		ct := tc.Type
		if ct == CardTypeUnknown && tc.NetworkTokenRefusal == "" && tc.ProcessorDecline == "" {
			t.Errorf("%s...: an entry with nothing to say", pan[:6])
		}
		n, err := ParseNumber(pan)
		if err != nil {
			t.Errorf("%s...: %v", pan[:6], err)
			continue
		}
		if n.CardType() != ct {
			t.Errorf("%s...: CardType = %q, want %q", pan[:6], n.CardType(), ct)
		}
		if n.Scheme() == SchemeUnknown {
			t.Errorf("%s...: unknown scheme", pan[:6])
		}
	}
}
