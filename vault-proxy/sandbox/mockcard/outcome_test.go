package mockcard_test

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/payorch/shared/logging/panscan"
	"github.com/payorch/shared/zone"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// The amount table of docs/sandbox/mock-card.md, over HTTP: every amount
// it names, and amounts next to them, which are approved.
func TestOutcomeByAmount(t *testing.T) {
	s := start(t, mockcard.Config{})
	cases := []struct {
		amount      int64
		status      string
		code        string
		declineCode string
		message     string
	}{
		{1299, "authorized", "00", "", "Approved"},
		{4000, "authorized", "00", "", "Approved"},
		{4001, "declined", "01", "issuer_decline", "Refer to card issuer"},
		{4004, "declined", "04", "pick_up_card", "Pick up card"},
		{4005, "declined", "05", "do_not_honor", "Do not honour"},
		{4012, "declined", "12", "invalid_transaction", "Invalid transaction"},
		{4013, "declined", "13", "invalid_amount", "Invalid amount"},
		{4014, "declined", "14", "invalid_number", "Invalid card number"},
		{4041, "declined", "41", "lost_card", "Lost card, pick up"},
		{4043, "declined", "43", "stolen_card", "Stolen card, pick up"},
		{4051, "declined", "51", "insufficient_funds", "Not sufficient funds"},
		{4054, "declined", "54", "expired_card", "Expired card"},
		{4057, "declined", "57", "transaction_not_permitted", "Transaction not permitted to cardholder"},
		{4059, "declined", "59", "suspected_fraud", "Suspected fraud"},
		{4061, "declined", "61", "exceeds_amount_limit", "Exceeds withdrawal amount limit"},
		{4062, "declined", "62", "restricted_card", "Restricted card"},
		{4065, "declined", "65", "exceeds_frequency_limit", "Exceeds withdrawal frequency limit"},
		{4082, "declined", "82", "incorrect_cvv", "Negative CVV result"},
		{4091, "declined", "91", "issuer_unavailable", "Issuer or switch inoperative"},
		{4096, "failed", "96", "processing_error", "System malfunction"},
		{4097, "authorized", "00", "", "Approved"},
		{140051, "authorized", "00", "", "Approved"},
		{99_999_999_999, "authorized", "00", "", "Approved"},
	}
	for _, tc := range cases {
		t.Run(strconv.FormatInt(tc.amount, 10), func(t *testing.T) {
			key := "amount-" + strconv.FormatInt(tc.amount, 10)
			a := s.authorize(t, key, request(tc.amount))
			if a.Status != tc.status || a.ResponseCode != tc.code || str(a.DeclineCode) != orNull(tc.declineCode) || a.ResponseMessage != tc.message {
				t.Fatalf("got %s %s %s %q, want %s %s %s %q", a.Status, a.ResponseCode, str(a.DeclineCode), a.ResponseMessage,
					tc.status, tc.code, orNull(tc.declineCode), tc.message)
			}
			if a.Amount != tc.amount || a.Currency != "EUR" || a.IdempotencyKey != key || a.CapturedAmount != 0 || a.RefundedAmount != 0 {
				t.Fatalf("amounts: %+v", a)
			}
			approved := tc.status == "authorized"
			if wantAuthorized := map[bool]int64{true: tc.amount}[approved]; a.AuthorizedAmount != wantAuthorized {
				t.Fatalf("authorized_amount %d, want %d", a.AuthorizedAmount, wantAuthorized)
			}
			if !approved {
				if a.SchemeTransactionID != nil {
					t.Fatalf("a %s authorization has a scheme transaction id", a.Status)
				}
				return
			}
			checkSchemeTransactionID(t, "visa", str(a.SchemeTransactionID))
			// Stable: the authorization keeps its id.
			code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations/"+a.ID, "", nil)
			if got := decode(t, raw); code != 200 || str(got.SchemeTransactionID) != str(a.SchemeTransactionID) {
				t.Fatalf("GET: %d %s", code, raw)
			}
		})
	}
}

func orNull(s string) string {
	if s == "" {
		return "<null>"
	}
	return s
}

// checkSchemeTransactionID holds an id to its scheme's shape, and to not
// being a card number: core-api refuses one that is a card number of a
// known scheme, and vault-proxy masks anything passing the Luhn check in
// the answer core-api gets.
func checkSchemeTransactionID(t *testing.T, scheme, id string) {
	t.Helper()
	shape := `^[1-9][0-9]{14}$`
	if scheme == "mastercard" {
		shape = `^MCC[0-9A-Z]{6}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])$`
	}
	if !regexp.MustCompile(shape).MatchString(id) {
		t.Fatalf("%s scheme transaction id %q, want %s", scheme, id, shape)
	}
	if panscan.Contains(id) || zone.HoldsCardNumber("scheme_transaction_id", id) {
		t.Fatalf("scheme transaction id %q looks like a card number", id)
	}
}

// Many approvals, so that the ids a careless generator would make card
// numbers of (one in ten passes the Luhn check) show up.
func TestSchemeTransactionIDsAreNeverCardNumbers(t *testing.T) {
	s := start(t, mockcard.Config{})
	seen := map[string]bool{}
	for i := range 300 {
		number := "4111111111111111"
		if i%2 == 1 {
			number = "5555555555554444"
		}
		a := s.authorize(t, "stid-"+strconv.Itoa(i), request(1000+int64(i), cardField("number", number)))
		id := str(a.SchemeTransactionID)
		checkSchemeTransactionID(t, str(a.Scheme), id)
		if seen[id] {
			t.Fatalf("scheme transaction id %s given twice", id)
		}
		seen[id] = true
	}
}

// The card decides before the amount: a number failing the Luhn check, an
// expiry in the past, a test card the table declines; the scheme is read
// from the number's IIN.
func TestOutcomeByCard(t *testing.T) {
	s := start(t, mockcard.Config{})
	type cardCase struct {
		name        string
		mutate      []func(map[string]any)
		amount      int64
		status      string
		code        string
		declineCode string
		scheme      string
	}
	cases := []cardCase{
		{"visa", nil, 1000, "authorized", "00", "", "visa"},
		{"mastercard", []func(map[string]any){cardField("number", "5555555555554444")}, 1000, "authorized", "00", "", "mastercard"},
		{"mastercard 2-series", []func(map[string]any){cardField("number", "2223003122003222")}, 1000, "authorized", "00", "", "mastercard"},
		{"amex", []func(map[string]any){cardField("number", "378282246310005"), cardField("security_code", "1234")}, 1000, "authorized", "00", "", "amex"},
		{"discover", []func(map[string]any){cardField("number", "6011111111111117")}, 1000, "authorized", "00", "", "discover"},
		{"jcb", []func(map[string]any){cardField("number", "3530111333300000")}, 1000, "authorized", "00", "", "jcb"},
		{"unknown scheme", []func(map[string]any){cardField("number", "1234567812345670")}, 1000, "authorized", "00", "", "<null>"},
		{"luhn failure", []func(map[string]any){cardField("number", "4111111111111112")}, 1000, "declined", "14", "invalid_number", "visa"},
		{"expired last month", []func(map[string]any){cardField("expiry_month", "5"), cardField("expiry_year", "2030")}, 1000, "declined", "54", "expired_card", "visa"},
		{"expires this month", []func(map[string]any){cardField("expiry_month", "06"), cardField("expiry_year", "2030")}, 1000, "authorized", "00", "", "visa"},
		{"expired beats the amount", []func(map[string]any){cardField("expiry_year", "2029")}, 4051, "declined", "54", "expired_card", "visa"},
		{"a Luhn failure beats an expiry", []func(map[string]any){cardField("number", "4111111111111112"), cardField("expiry_year", "2029")}, 1000, "declined", "14", "invalid_number", "visa"},
	}
	for pan, tc := range card.TestCards() {
		if tc.ProcessorDecline == "" {
			continue
		}
		cases = append(cases, cardCase{"test card " + pan[:6] + "..." + pan[len(pan)-4:], []func(map[string]any){cardField("number", pan)}, 1000, "declined", tc.ProcessorDecline,
			map[string]string{"05": "do_not_honor", "51": "insufficient_funds"}[tc.ProcessorDecline], "visa"})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := s.authorize(t, "card-"+strconv.Itoa(i), request(tc.amount, tc.mutate...))
			if a.Status != tc.status || a.ResponseCode != tc.code || str(a.DeclineCode) != orNull(tc.declineCode) || str(a.Scheme) != tc.scheme {
				t.Fatalf("got %s %s %s scheme %s, want %s %s %s scheme %s", a.Status, a.ResponseCode, str(a.DeclineCode), str(a.Scheme),
					tc.status, tc.code, orNull(tc.declineCode), tc.scheme)
			}
		})
	}
}

// AVS by billing postal code and CVV by security code, as the doc's
// tables say; a decline for a bad CVV says N whatever code was sent.
func TestAVSAndCVVResults(t *testing.T) {
	s := start(t, mockcard.Config{})
	cases := []struct {
		name     string
		mutate   []func(map[string]any)
		amount   int64
		avs, cvv string
	}{
		{"match", nil, 1000, "Y", "M"},
		{"postal code 11111", []func(map[string]any){field("billing", map[string]any{"postal_code": "11111"})}, 1000, "N", "M"},
		{"postal code 22222", []func(map[string]any){field("billing", map[string]any{"postal_code": "22222"})}, 1000, "U", "M"},
		{"postal code 33333", []func(map[string]any){field("billing", map[string]any{"postal_code": "33333"})}, 1000, "R", "M"},
		{"postal code 44444", []func(map[string]any){field("billing", map[string]any{"postal_code": "44444"})}, 1000, "S", "M"},
		{"other postal code", []func(map[string]any){field("billing", map[string]any{"postal_code": "SW1A 1AA"})}, 1000, "Y", "M"},
		{"empty postal code", []func(map[string]any){field("billing", map[string]any{"postal_code": ""})}, 1000, "<null>", "M"},
		{"no billing", []func(map[string]any){field("billing", nil)}, 1000, "<null>", "M"},
		{"security code 111", []func(map[string]any){cardField("security_code", "111")}, 1000, "Y", "N"},
		{"security code 1111", []func(map[string]any){cardField("security_code", "1111")}, 1000, "Y", "N"},
		{"security code 222", []func(map[string]any){cardField("security_code", "222")}, 1000, "Y", "U"},
		{"security code 333", []func(map[string]any){cardField("security_code", "333")}, 1000, "Y", "P"},
		{"no security code", []func(map[string]any){withoutCardField("security_code")}, 1000, "Y", "<null>"},
		{"empty security code", []func(map[string]any){cardField("security_code", "")}, 1000, "Y", "<null>"},
		{"incorrect_cvv amount", nil, 4082, "Y", "N"},
		{"incorrect_cvv amount without a code", []func(map[string]any){withoutCardField("security_code")}, 4082, "Y", "<null>"},
		{"failed: the issuer checked nothing", nil, 4096, "<null>", "<null>"},
		{"declined: the issuer checked", []func(map[string]any){field("billing", map[string]any{"postal_code": "11111"})}, 4051, "N", "M"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := s.authorize(t, "avs-"+strconv.Itoa(i), request(tc.amount, tc.mutate...))
			if str(a.AVSResult) != tc.avs || str(a.CVVResult) != tc.cvv {
				t.Fatalf("avs %s cvv %s, want %s %s", str(a.AVSResult), str(a.CVVResult), tc.avs, tc.cvv)
			}
		})
	}
}

// A subsequent merchant-initiated payment names the first one's scheme
// transaction id and needs no security code.
func TestMerchantInitiatedPayments(t *testing.T) {
	s := start(t, mockcard.Config{})
	first := s.authorize(t, "cit", request(1000, field("payment_source", "recurring")))
	mit := s.authorize(t, "mit", request(1000, withoutCardField("security_code"), field("merchant_initiated", true),
		field("payment_source", "recurring"), field("previous_scheme_transaction_id", str(first.SchemeTransactionID))))
	if mit.Status != "authorized" || !mit.MerchantInitiated || mit.PaymentSource != "recurring" || mit.CVVResult != nil ||
		str(mit.PreviousSchemeTransactionID) != str(first.SchemeTransactionID) {
		t.Fatalf("merchant-initiated: %+v", mit)
	}
	if first.PreviousSchemeTransactionID != nil {
		t.Fatalf("the first payment names a previous one: %s", str(first.PreviousSchemeTransactionID))
	}
	// Without the first payment's id the issuer declines, whatever the
	// amount table says of the amount; a customer-initiated payment needs
	// none, with or without a security code.
	for _, source := range []string{"recurring", "installment", "card_on_file"} {
		a := s.authorize(t, "mit-alone-"+source, request(1000, withoutCardField("security_code"), field("merchant_initiated", true),
			field("payment_source", source)))
		if a.Status != "declined" || a.ResponseCode != "12" || str(a.DeclineCode) != "previous_scheme_transaction_id_required" ||
			a.AuthorizedAmount != 0 || a.SchemeTransactionID != nil {
			t.Fatalf("merchant-initiated %s without the first payment: %+v", source, a)
		}
	}
	if a := s.authorize(t, "cit-no-code", request(1000, withoutCardField("security_code"), field("payment_source", "recurring"))); a.Status != "authorized" || a.CVVResult != nil {
		t.Fatalf("customer-initiated without a security code: %+v", a)
	}
	if a := s.authorize(t, "cit-no-code-declined", request(4051, withoutCardField("security_code"))); a.Status != "declined" || str(a.DeclineCode) != "insufficient_funds" {
		t.Fatalf("customer-initiated without a security code, amount 4051: %+v", a)
	}
	if str(mit.SchemeTransactionID) == str(first.SchemeTransactionID) {
		t.Fatal("a new payment has the first one's scheme transaction id")
	}
	if a := s.authorize(t, "default-source", request(1000, field("payment_source", nil))); a.PaymentSource != "ecommerce" {
		t.Fatalf("payment_source defaults to %q", a.PaymentSource)
	}
}
