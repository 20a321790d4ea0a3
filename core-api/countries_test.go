package coreapi

import "testing"

func TestCountryTable(t *testing.T) {
	if n := len(countryCodes) / 2; n != 249 || len(countryCodes)%2 != 0 {
		t.Fatalf("%d codes", n)
	}
	for i := 2; i < len(countryCodes); i += 2 {
		if countryCodes[i-2:i] >= countryCodes[i:i+2] {
			t.Fatalf("not sorted at %s", countryCodes[i:i+2])
		}
	}
	for i := 0; i < len(countryCodes); i += 2 {
		if !ValidCountry(countryCodes[i : i+2]) {
			t.Fatalf("%s not found", countryCodes[i:i+2])
		}
	}
	for _, c := range []string{"", "U", "us", "USA", "XK", "ZZ", "AA", "UK", "EU"} {
		if ValidCountry(c) {
			t.Errorf("%q accepted", c)
		}
	}
}
