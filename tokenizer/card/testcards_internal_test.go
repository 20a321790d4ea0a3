package card

import "testing"

// TestTestCardTypes keeps the table honest: every key is a valid PAN.
func TestTestCardTypes(t *testing.T) {
	for pan, ct := range testCardTypes {
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
