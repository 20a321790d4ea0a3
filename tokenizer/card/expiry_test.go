package card_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/payorch/tokenizer/card"
)

func TestParseExpiry(t *testing.T) {
	// fixedNow is 2026-03-15.
	tests := []struct {
		name string
		in   string
		want card.Expiry
		code string // "" when accepted
	}{
		{"current month", "03/26", card.Expiry{Month: 3, Year: 2026}, ""},
		{"next month", "04/26", card.Expiry{Month: 4, Year: 2026}, ""},
		{"later this year", "12/26", card.Expiry{Month: 12, Year: 2026}, ""},
		{"next year", "01/27", card.Expiry{Month: 1, Year: 2027}, ""},
		{"far future", "12/99", card.Expiry{Month: 12, Year: 2099}, ""},

		{"last month", "02/26", card.Expiry{}, card.CodeExpired},
		{"last year", "12/25", card.Expiry{}, card.CodeExpired},
		{"year 2000", "01/00", card.Expiry{}, card.CodeExpired},

		{"month 00", "00/27", card.Expiry{}, card.CodeInvalidMonth},
		{"month 13", "13/27", card.Expiry{}, card.CodeInvalidMonth},
		{"month 99", "99/27", card.Expiry{}, card.CodeInvalidMonth},

		{"empty", "", card.Expiry{}, card.CodeRequired},
		{"one-digit month", "1/27", card.Expiry{}, card.CodeInvalidFormat},
		{"one-digit year", "12/2", card.Expiry{}, card.CodeInvalidFormat},
		{"four-digit year", "12/2027", card.Expiry{}, card.CodeInvalidFormat},
		{"dash", "12-27", card.Expiry{}, card.CodeInvalidFormat},
		{"no separator", "1227", card.Expiry{}, card.CodeInvalidFormat},
		{"leading space", " 12/27", card.Expiry{}, card.CodeInvalidFormat},
		{"trailing space", "12/27 ", card.Expiry{}, card.CodeInvalidFormat},
		{"spaces around slash", "12 / 27", card.Expiry{}, card.CodeInvalidFormat},
		{"letters", "ab/cd", card.Expiry{}, card.CodeInvalidFormat},
		{"letter in year", "12/2a", card.Expiry{}, card.CodeInvalidFormat},
		{"only slash", "/", card.Expiry{}, card.CodeInvalidFormat},
		{"double slash", "12//7", card.Expiry{}, card.CodeInvalidFormat},
		{"fullwidth digits", "\uff11\uff12/\uff12\uff17", card.Expiry{}, card.CodeInvalidFormat},
		{"sign", "+1/27", card.Expiry{}, card.CodeInvalidFormat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := card.ParseExpiry(tc.in, fixedNow)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
				if got.String() != tc.in {
					t.Errorf("String = %q, want %q", got.String(), tc.in)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %+v, want %s", got, tc.code)
			}
			if got != (card.Expiry{}) {
				t.Errorf("non-zero Expiry %+v returned with an error", got)
			}
			fe := fieldError(t, err)
			if fe.Field != card.FieldExpirationDate || fe.Code != tc.code {
				t.Errorf("error %s/%s, want %s/%s", fe.Field, fe.Code, card.FieldExpirationDate, tc.code)
			}
		})
	}
}

// TestExpiryBoundary pins "valid through the last day of the month,
// anywhere on Earth" (UTC-12), and the strict reading beside it (the month
// over from UTC+14, 26 hours earlier).
func TestExpiryBoundary(t *testing.T) {
	jan26 := card.Expiry{Month: 1, Year: 2026}
	dec26 := card.Expiry{Month: 12, Year: 2026}
	tests := []struct {
		name    string
		e       card.Expiry
		now     time.Time
		expired bool // Expired, the lenient reading
		strict  bool // ExpiredSomewhere: over from UTC+14
	}{
		{"before the month", jan26, time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), false, false},
		{"first day", jan26, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), false, false},
		{"still the 31st in UTC+14", jan26, time.Date(2026, 1, 31, 9, 59, 59, 0, time.UTC), false, false},
		{"the 1st in UTC+14", jan26, time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC), false, true},
		{"last second of the month in UTC", jan26, time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC), false, true},
		{"still the 31st in UTC-12", jan26, time.Date(2026, 2, 1, 11, 59, 59, 999999999, time.UTC), false, true},
		{"the month is over everywhere", jan26, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC), true, true},
		{"next year", jan26, time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC), true, true},
		{"zone of now does not matter", jan26, time.Date(2026, 2, 1, 12, 0, 0, 0, time.FixedZone("UTC+14", 14*3600)), false, true},
		{"zone of now does not matter, expired", jan26, time.Date(2026, 2, 2, 2, 0, 0, 0, time.FixedZone("UTC+14", 14*3600)), true, true},
		{"december, year rollover, still valid in UTC+14", dec26, time.Date(2026, 12, 31, 9, 59, 59, 0, time.UTC), false, false},
		{"december, year rollover, valid", dec26, time.Date(2027, 1, 1, 11, 59, 59, 0, time.UTC), false, true},
		{"december, year rollover, expired", dec26, time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Expired(tc.now); got != tc.expired {
				t.Errorf("Expired(%s) = %v, want %v", tc.now.Format(time.RFC3339), got, tc.expired)
			}
			if got := tc.e.ExpiredSomewhere(tc.now); got != tc.strict {
				t.Errorf("ExpiredSomewhere(%s) = %v, want %v", tc.now.Format(time.RFC3339), got, tc.strict)
			}
			_, err := card.ParseExpiry(tc.e.String(), tc.now)
			if (err != nil) != tc.expired {
				t.Errorf("ParseExpiry error = %v, want expired %v", err, tc.expired)
			}
		})
	}
}

func TestExpiryFormatAs(t *testing.T) {
	jan := card.Expiry{Month: 1, Year: 2026}
	dec := card.Expiry{Month: 12, Year: 2030}
	tests := []struct {
		name    string
		e       card.Expiry
		f       card.ExpiryFormat
		want    string
		wantErr error
	}{
		{"default", jan, "", "01/26", nil},
		{"MM/YY", jan, card.ExpiryMMYY, "01/26", nil},
		{"M", jan, card.ExpiryM, "1", nil},
		{"M two digits", dec, card.ExpiryM, "12", nil},
		{"MM", jan, card.ExpiryMM, "01", nil},
		{"YY", jan, card.ExpiryYY, "26", nil},
		{"YYYY", jan, card.ExpiryYYYY, "2026", nil},
		{"YY of 2000s", card.Expiry{Month: 5, Year: 2005}, card.ExpiryYY, "05", nil},
		{"unknown format", jan, "DD", "", card.ErrExpiryFormat},
		{"lower case is unknown", jan, "mm", "", card.ErrExpiryFormat},
		{"zero expiry", card.Expiry{}, card.ExpiryMMYY, "", card.ErrInvalidExpiry},
		{"month 13", card.Expiry{Month: 13, Year: 2026}, card.ExpiryMM, "", card.ErrInvalidExpiry},
		{"year 2100", card.Expiry{Month: 1, Year: 2100}, card.ExpiryYY, "", card.ErrInvalidExpiry},
		{"two-digit year", card.Expiry{Month: 1, Year: 26}, card.ExpiryYYYY, "", card.ErrInvalidExpiry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.e.FormatAs(tc.f)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("FormatAs(%q) = %q, want %q", tc.f, got, tc.want)
			}
			// AppendFormat appends the same, and nothing on an error.
			b, err := tc.e.AppendFormat([]byte("x="), tc.f)
			if !errors.Is(err, tc.wantErr) || string(b) != "x="+tc.want {
				t.Errorf("AppendFormat(%q) = %q, %v", tc.f, b, err)
			}
		})
	}
}

func TestParseExpiryFormat(t *testing.T) {
	tests := []struct {
		variant string
		want    card.ExpiryFormat
		ok      bool
	}{
		{"", card.ExpiryMMYY, true},
		{"MM/YY", card.ExpiryMMYY, true},
		{"M", card.ExpiryM, true},
		{"MM", card.ExpiryMM, true},
		{"YY", card.ExpiryYY, true},
		{"YYYY", card.ExpiryYYYY, true},
		{"mm", "", false},
		{"DD", "", false},
		{"MMYY", "", false},
	}
	for _, tc := range tests {
		t.Run("variant "+tc.variant, func(t *testing.T) {
			got, ok := card.ParseExpiryFormat(tc.variant)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseExpiryFormat(%q) = %q, %v; want %q, %v", tc.variant, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestExpiryText(t *testing.T) {
	t.Run("JSON", func(t *testing.T) {
		b, err := json.Marshal(struct {
			ExpirationDate card.Expiry `json:"expiration_date"`
		}{card.Expiry{Month: 7, Year: 2031}})
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != `{"expiration_date":"07/31"}` {
			t.Errorf("got %s", b)
		}
	})
	t.Run("marshal invalid fails", func(t *testing.T) {
		if _, err := json.Marshal(card.Expiry{}); err == nil {
			t.Error("zero Expiry marshalled")
		}
	})
	t.Run("unmarshal a past date", func(t *testing.T) {
		var e card.Expiry
		if err := json.Unmarshal([]byte(`"01/20"`), &e); err != nil {
			t.Fatal(err)
		}
		if e != (card.Expiry{Month: 1, Year: 2020}) {
			t.Errorf("got %+v", e)
		}
	})
	t.Run("unmarshal checks the form", func(t *testing.T) {
		for _, in := range []string{`"13/20"`, `"1/20"`, `""`, `"01/2020"`} {
			var e card.Expiry
			if err := json.Unmarshal([]byte(in), &e); err == nil {
				t.Errorf("%s accepted as %+v", in, e)
			}
		}
	})
}
