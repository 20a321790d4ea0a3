package httpapi

import (
	"errors"
	"net/url"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
)

// The list's filters: each value read into the filter, every bad one a
// 400 naming its query parameter, all at once.
func TestTransactionFilter(t *testing.T) {
	const id = "0b5f2a0e-6d1c-4d7e-9c2a-3f1e8b7a6c5d"
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		query string
		want  coreapi.TransactionFilter
		bad   []string // the parameters named by the 400, in order
	}{
		{"none", "", coreapi.TransactionFilter{}, nil},
		{"created_at range", "created_at_gte=2030-06-15T12:00:00Z&created_at_lte=2030-06-15T14:00:00.5%2B02:00",
			coreapi.TransactionFilter{CreatedAtGTE: at("2030-06-15T12:00:00Z"), CreatedAtLTE: at("2030-06-15T14:00:00.5+02:00")}, nil},
		{"amount range", "amount_gte=0&amount_lte=99999999", coreapi.TransactionFilter{AmountGTE: n(0), AmountLTE: n(99999999)}, nil},
		{"one amount", "amount_lte=4098", coreapi.TransactionFilter{AmountLTE: n(4098)}, nil},
		{"payment service", "payment_service_id=" + id, coreapi.TransactionFilter{PaymentServiceID: id}, nil},
		{"statuses and ids", "status=processing&status=capture_succeeded&buyer_id=" + id + "&payment_method_id=" + id,
			coreapi.TransactionFilter{Statuses: []coreapi.TransactionStatus{coreapi.TransactionProcessing, coreapi.TransactionCaptureSucceeded},
				BuyerID: id, PaymentMethodID: id}, nil},
		{"time without offset", "created_at_gte=2030-06-15T12:00:00", coreapi.TransactionFilter{}, []string{"created_at_gte"}},
		{"a date only", "created_at_lte=2030-06-15", coreapi.TransactionFilter{}, []string{"created_at_lte"}},
		{"an unescaped + (a space)", "created_at_gte=2030-06-15T12:00:00+02:00", coreapi.TransactionFilter{}, []string{"created_at_gte"}},
		{"time twice", "created_at_gte=2030-06-15T12:00:00Z&created_at_gte=2030-06-16T12:00:00Z", coreapi.TransactionFilter{}, []string{"created_at_gte"}},
		{"inverted time range", "created_at_gte=2030-06-16T00:00:00Z&created_at_lte=2030-06-15T00:00:00Z", coreapi.TransactionFilter{}, []string{"created_at_gte"}},
		{"negative amount", "amount_gte=-1", coreapi.TransactionFilter{}, []string{"amount_gte"}},
		{"amount too large", "amount_lte=100000000", coreapi.TransactionFilter{}, []string{"amount_lte"}},
		{"amount not an integer", "amount_lte=12.5", coreapi.TransactionFilter{}, []string{"amount_lte"}},
		{"inverted amount range", "amount_gte=500&amount_lte=100", coreapi.TransactionFilter{}, []string{"amount_gte"}},
		{"payment service not a UUID", "payment_service_id=ps-1", coreapi.TransactionFilter{}, []string{"payment_service_id"}},
		{"payment service in upper case", "payment_service_id=0B5F2A0E-6D1C-4D7E-9C2A-3F1E8B7A6C5D", coreapi.TransactionFilter{}, []string{"payment_service_id"}},
		{"several at once", "status=paid&amount_gte=x&created_at_lte=yesterday", coreapi.TransactionFilter{},
			[]string{"status", "created_at_lte", "amount_gte"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			f, err := transactionFilter(q)
			if tc.bad != nil {
				var e *apierror.Error
				if !errors.As(err, &e) || e.Status != 400 || len(e.Details) != len(tc.bad) {
					t.Fatalf("error = %v, want 400 on %v", err, tc.bad)
				}
				for i, d := range e.Details {
					if d.Location != apierror.LocationQuery || d.Pointer != tc.bad[i] || d.Message == "" || d.Type == "" {
						t.Errorf("detail %d = %+v, want one on query %s", i, d, tc.bad[i])
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := transactionBinding("m", f), transactionBinding("m", tc.want); got != want {
				t.Fatalf("filter = %+v, want %+v", f, tc.want)
			}
		})
	}
}

// A cursor is bound to every filter: changing any one changes the
// binding; the same instant written with another offset does not.
func TestTransactionBindingCoversEveryFilter(t *testing.T) {
	t0 := time.Date(2030, 6, 15, 12, 0, 0, 0, time.UTC)
	t0Berlin := t0.In(time.FixedZone("CEST", 2*3600))
	t1 := t0.Add(time.Nanosecond)
	a, b := int64(100), int64(101)
	base := coreapi.TransactionFilter{}
	seen := map[string]string{transactionBinding("m", base): "no filter"}
	for name, f := range map[string]coreapi.TransactionFilter{
		"status":              {Statuses: []coreapi.TransactionStatus{coreapi.TransactionProcessing}},
		"created_at_gte":      {CreatedAtGTE: &t0},
		"created_at_gte+1ns":  {CreatedAtGTE: &t1},
		"created_at_lte":      {CreatedAtLTE: &t0},
		"amount_gte":          {AmountGTE: &a},
		"amount_gte 101":      {AmountGTE: &b},
		"amount_lte":          {AmountLTE: &a},
		"buyer_id":            {BuyerID: "x"},
		"external_identifier": {ExternalIdentifier: "x"},
		"payment_method_id":   {PaymentMethodID: "x"},
		"payment_service_id":  {PaymentServiceID: "x"},
	} {
		bind := transactionBinding("m", f)
		if other, dup := seen[bind]; dup {
			t.Errorf("%s binds as %s does", name, other)
		}
		seen[bind] = name
	}
	if transactionBinding("m", base) == transactionBinding("n", base) {
		t.Error("the merchant account is not bound")
	}
	if transactionBinding("m", coreapi.TransactionFilter{CreatedAtGTE: &t0}) != transactionBinding("m", coreapi.TransactionFilter{CreatedAtGTE: &t0Berlin}) {
		t.Error("one instant in two offsets binds differently")
	}
}
