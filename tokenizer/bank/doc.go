// Package bank validates bank account details for the three direct bank
// schemes (ACH, SEPA, Bacs) before vault-proxy vaults them, and carries the
// sensitive number in a type that cannot be printed, logged or serialised by
// accident. It does no I/O.
//
// # API
//
//	acct, errs := bank.Validate(bank.Input{
//		Scheme:            "sepa",            // "ach" | "sepa" | "bacs"
//		IBAN:              body["iban"],      // sepa: required; []byte so the caller can clear it
//		BIC:               "DEUTDEFF",        // sepa: optional
//		AccountNumber:     nil,               // ach (4-17 digits), bacs (8 digits)
//		RoutingNumber:     "",                // ach: 9 digits, ABA checksum
//		SortCode:          "",                // bacs: 6 digits ("12-34-56" accepted)
//		AccountType:       "",                // ach only: "checking" | "savings" (optional)
//		AccountHolderName: "Jane Doe",        // required, 1-200 characters
//		Country:           "",                // optional, derived from the scheme / IBAN
//		Currency:          "",                // optional, derived from the scheme
//	})
//	if errs != nil { /* one FieldError per bad field, in Fields order */ }
//	defer acct.Number.Zero()
//	vault(acct.Number.Reveal())               // the normalized account number or IBAN
//	passOn(acct.Scheme, acct.Last4(), acct.Country, acct.Currency, acct.RoutingNumber, ...)
//
// [Validate] never modifies or retains Input's byte slices: the caller
// clears them. On success the [Account] holds its own copy of the
// normalized sensitive number ([Number]: digits for ach/bacs, the IBAN in
// upper case without spaces for sepa); every other Account field is
// non-sensitive and may be passed to core-api and shown to a merchant.
//
// # Rules
//
// Every scheme: account_holder_name is required (1-200 characters, no
// control characters). country and currency are optional; when absent they
// are derived (ach: US/USD; bacs: GB/GBP; sepa: the IBAN's country and EUR)
// and when present they must be an ISO 3166-1 alpha-2 code / an ISO 4217
// code matching the scheme [unsupported_country, currency_mismatch].
// Fields that belong to another scheme are refused [not_allowed], so a
// sensitive value sent under the wrong name is never silently dropped.
//
//   - ach: routing_number is 9 digits whose ABA checksum
//     3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) is a multiple of 10;
//     account_number is 4-17 digits; account_type is checking or savings.
//   - sepa: iban (spaces allowed, any case) has a known country code, that
//     country's length (table in iban.go, from the SWIFT IBAN registry) and
//     passes ISO 7064 mod 97-10; for the sepa scheme the country must be in
//     the SEPA area. bic is optional: ^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$
//     with an ISO 3166-1 country in positions 5-6.
//   - bacs: sort_code is 6 digits (single dashes or spaces between pairs
//     accepted), account_number is 8 digits. The Vocalink modulus check
//     (sort-code-specific weightings, a table that changes several times a
//     year) is deliberately NOT performed: a wrong account number is caught
//     by the Bacs account validation at mandate set-up instead, which a
//     connector does anyway.
//
// # Errors
//
// Failures are [FieldError] values {Field, Code, Message}, the same shape as
// tokenizer/card's, with Field the request field name ("iban",
// "routing_number", ...). No message ever quotes the input, so an error can
// be returned to the client and logged as is.
package bank
