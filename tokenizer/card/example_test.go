package card_test

import (
	"fmt"
	"time"

	"github.com/payorch/tokenizer/card"
)

func ExampleValidate() {
	now := time.Date(2026, time.March, 15, 0, 0, 0, 0, time.UTC) // time.Now() in production

	in := card.CardInput{
		Number:         []byte("4242 4242 4242 4242"),
		ExpirationDate: "12/30",
		SecurityCode:   []byte("123"),
	}
	c, errs := card.Validate(in, now)
	clear(in.Number) // the Card holds its own copies
	clear(in.SecurityCode)
	if errs != nil {
		fmt.Println(errs)
		return
	}
	defer c.Zero()

	fmt.Println(c.Number) // redacted
	d := c.Number.Display()
	fmt.Println(d.Scheme, d.Label, d.BIN, d.CardType)
	fmt.Println(c.Expiry)

	_, errs = card.Validate(card.CardInput{
		Number:         []byte("4242 4242 4242 4241"),
		ExpirationDate: "13/30",
		SecurityCode:   []byte("12"),
	}, now)
	for _, e := range errs {
		fmt.Println(e.Field, e.Code)
	}
	// Output:
	// card(visa ****4242)
	// visa 4242 42424242 credit
	// 12/30
	// number luhn_check_failed
	// expiration_date invalid_month
	// security_code invalid_security_code
}

func ExampleExpiry_FormatAs() {
	e := card.Expiry{Month: 3, Year: 2031}
	for _, variant := range []string{"", "M", "MM", "YY", "YYYY"} {
		f, _ := card.ParseExpiryFormat(variant) // the placeholder's variant word
		s, _ := e.FormatAs(f)
		fmt.Printf("%q -> %s\n", variant, s)
	}
	// Output:
	// "" -> 03/31
	// "M" -> 3
	// "MM" -> 03
	// "YY" -> 31
	// "YYYY" -> 2031
}
