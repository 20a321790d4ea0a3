// Package substitutetest holds the request templates the vault forward
// benchmarks measure, so that the end-to-end figure and the template's own
// benchmark run on the same bytes.
package substitutetest

// ForwardBody is a ~1 KB processor request (1,024 bytes of JSON) with 4
// placeholders over 2 cards: card 1's number and MM expiry month, card 2's
// number and YYYY year, with spaces inside the braces.
func ForwardBody() []byte {
	b := []byte(`{"merchant_reference":"order-2024-000187342","amount":1299,"currency":"EUR","capture":false,` +
		`"payment_instruments":[` +
		`{"type":"card","number":"{{ CARD_NUMBER_1 }}","expiry_month":"{{ CARD_EXPIRATION_DATE_MM_1 }}","holder_name":"Jane Q. Public","role":"primary"},` +
		`{"type":"card","number":"{{ CARD_NUMBER_2 }}","expiry_year":"{{ CARD_EXPIRATION_DATE_YYYY_2 }}","holder_name":"Jane Q. Public","role":"fallback"}],` +
		`"billing_address":{"line1":"12 Example Street","line2":"Flat 4","city":"London","postal_code":"EC1A 1BB","country":"GB"},` +
		`"shopper":{"email":"jane.public@example.com","ip_address":"203.0.113.24","user_agent":"Mozilla/5.0 (X11; Linux x86_64)","locale":"en-GB"},` +
		`"items":[{"sku":"SKU-1001","name":"Espresso beans 1kg","quantity":1,"unit_amount":899},` +
		`{"sku":"SKU-2002","name":"Paper filters","quantity":2,"unit_amount":200}],` +
		`"metadata":{"channel":"web","campaign":"spring","cart_id":"c_7f2b9a61","attempt":"1"},"notes":"`)
	for len(b) < 1024-3 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}
