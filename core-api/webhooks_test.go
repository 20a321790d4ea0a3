package coreapi_test

import (
	"slices"
	"testing"

	coreapi "github.com/payorch/core-api"
)

// Every step a transaction's history records maps to its outbound event
// in one table; a step missing from it would change state silently.
func TestTransactionEventNames(t *testing.T) {
	cases := []struct {
		step string
		want string // "" when nothing is announced
	}{
		{coreapi.EventTransactionCreated, "transaction.created"},
		{string(coreapi.OpApprovalRequested), "transaction.buyer-approval-pending"},
		{string(coreapi.OpAuthorizationPending), "transaction.authorization-pending"},
		{string(coreapi.OpAuthorizationSucceeded), "transaction.authorized"},
		{string(coreapi.OpAuthorizationDeclined), "transaction.declined"},
		{string(coreapi.OpAuthorizationFailed), "transaction.failed"},
		{string(coreapi.OpSaleSucceeded), "transaction.captured"},
		{string(coreapi.OpSalePending), "transaction.capture-pending"},
		{string(coreapi.OpSaleExpired), "transaction.expired"},
		{string(coreapi.OpSaleFailed), "transaction.failed"},
		{string(coreapi.OpCaptureRequested), "transaction.capture-requested"},
		{string(coreapi.OpCapturePending), "transaction.capture-pending"},
		{string(coreapi.OpCaptureSucceeded), "transaction.captured"},
		{string(coreapi.OpCaptureDeclined), "transaction.capture-declined"},
		{string(coreapi.OpCaptureFailed), "transaction.capture-failed"},
		{string(coreapi.OpVoidRequested), "transaction.void-requested"},
		{string(coreapi.OpVoidPending), "transaction.void-pending"},
		{string(coreapi.OpVoidSucceeded), "transaction.voided"},
		{string(coreapi.OpVoidDeclined), "transaction.void-declined"},
		{string(coreapi.OpVoidFailed), "transaction.void-failed"},
		{string(coreapi.OpRefundRequested), "refund.created"},
		{string(coreapi.OpRefundPending), "refund.pending"},
		{string(coreapi.OpRefundSucceeded), "refund.succeeded"},
		{string(coreapi.OpRefundDeclined), "refund.declined"},
		{string(coreapi.OpRefundFailed), "refund.failed"},
		{string(coreapi.OpThreeDSAuthenticated), "transaction.three-d-secure-authenticated"},
		{string(coreapi.OpThreeDSChallengeRequested), "transaction.buyer-approval-pending"},
		{string(coreapi.OpThreeDSDeclined), "transaction.declined"},
		{string(coreapi.OpThreeDSFailed), "transaction.failed"},
		{string(coreapi.OpAntiFraudReview), "transaction.anti-fraud-review"},
		{string(coreapi.OpAntiFraudRejected), "transaction.declined"},
		{string(coreapi.OpAntiFraudFailed), "transaction.failed"},
		{string(coreapi.OpAntiFraudReviewDeclined), "transaction.anti-fraud-review-declined"},
		{coreapi.EventNotificationReceived, ""},
	}
	for _, c := range cases {
		got, ok := coreapi.TransactionEventName(c.step)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("TransactionEventName(%q) = %q, %v; want %q", c.step, got, ok, c.want)
		}
	}
	for _, op := range coreapi.TransactionOperations {
		if _, ok := coreapi.TransactionEventName(string(op)); !ok {
			t.Errorf("operation %s announces no outbound event", op)
		}
	}
	names := coreapi.WebhookEventNames()
	for _, c := range cases {
		if c.want != "" && !slices.Contains(names, c.want) {
			t.Errorf("WebhookEventNames lacks %s", c.want)
		}
	}
}

func TestWebhookSubscriptionFieldsValidate(t *testing.T) {
	cases := []struct {
		name       string
		f          coreapi.WebhookSubscriptionFields
		production bool
		pointer    string // "" when valid
	}{
		{"https", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://hooks.example.com/x")}, true, ""},
		{"http outside production", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("http://hooks.example.com/x")}, false, ""},
		{"http in production", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("http://hooks.example.com/x")}, true, "/url"},
		{"missing url", coreapi.WebhookSubscriptionFields{}, false, "/url"},
		{"relative url", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("/hooks")}, false, "/url"},
		{"ftp", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("ftp://hooks.example.com/")}, false, "/url"},
		{"credentials in url", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://u:p@hooks.example.com/")}, false, "/url"},
		{"unknown event", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://h.example.com/"),
			EventNames: coreapi.Some([]string{"transaction.nope"})}, false, "/event_names"},
		{"empty filter", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://h.example.com/"),
			EventNames: coreapi.Some([]string{})}, false, "/event_names"},
		{"known events", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://h.example.com/"),
			EventNames: coreapi.Some([]string{"transaction.authorized", "refund.succeeded"})}, false, ""},
		{"colon in username", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://h.example.com/"),
			BasicAuth: coreapi.Some(&coreapi.BasicAuth{Username: "a:b", Password: "p"})}, false, "/basic_auth/username"},
		{"empty password", coreapi.WebhookSubscriptionFields{URL: coreapi.Some("https://h.example.com/"),
			BasicAuth: coreapi.Some(&coreapi.BasicAuth{Username: "a", Password: ""})}, false, "/basic_auth/password"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.f.Validate(true, c.production)
			if c.pointer == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			ve, ok := err.(*coreapi.ValidationError)
			if !ok || ve.Problems[0].Pointer != c.pointer {
				t.Fatalf("Validate = %#v; want a problem at %s", err, c.pointer)
			}
		})
	}
}
