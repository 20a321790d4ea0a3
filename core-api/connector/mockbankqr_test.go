package connector_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/shared/secret"
)

// sign is mock-bank's signature of body at ts with key (the documented
// contract, written out here rather than taken from the simulator).
func sign(key, ts string, body []byte) string {
	return "v1=" + hex.EncodeToString(hmacSHA256([]byte(key), append([]byte(ts+"."), body...)))
}

// Each way a notification fails verification, and the one that passes,
// with the payment service's secret or the built-in one.
func TestMockBankVerifyNotification(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"mbn_1","type":"qr_charge.paid","data":{"id":"mbq_1","reference":"ref-1","amount":100,"currency":"BRL","status":"paid"}}`)
	ps := connector.Config{Credentials: connector.Secrets{"webhook_secret": secret.New("whsec_of_the_payment_service")}}
	ts := strconv.FormatInt(now.Unix(), 10)
	headers := func(key, ts string, b []byte) http.Header {
		return http.Header{"Mock-Bank-Timestamp": {ts}, "Mock-Bank-Signature": {sign(key, ts, b)}, "Mock-Bank-Notification-Id": {"mbn_1"}}
	}
	for _, tc := range []struct {
		name string
		cfg  connector.Config
		h    http.Header
		body []byte
		want error
	}{
		{"built-in secret", connector.Config{}, headers(connector.MockBankSandboxWebhookSecret, ts, body), body, nil},
		{"payment service's secret", ps, headers("whsec_of_the_payment_service", ts, body), body, nil},
		{"the built-in secret for a payment service's payment", ps, headers(connector.MockBankSandboxWebhookSecret, ts, body), body, connector.ErrBadSignature},
		{"another body", connector.Config{}, headers(connector.MockBankSandboxWebhookSecret, ts, body), append([]byte(" "), body...), connector.ErrBadSignature},
		{"no signature", connector.Config{}, http.Header{"Mock-Bank-Timestamp": {ts}}, body, connector.ErrBadSignature},
		{"no timestamp", connector.Config{}, http.Header{"Mock-Bank-Signature": {sign(connector.MockBankSandboxWebhookSecret, ts, body)}}, body, connector.ErrBadSignature},
		{"not hex", connector.Config{}, http.Header{"Mock-Bank-Timestamp": {ts}, "Mock-Bank-Signature": {"v1=zz"}}, body, connector.ErrBadSignature},
		{"too old", connector.Config{}, headers(connector.MockBankSandboxWebhookSecret, strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10), body), body, connector.ErrBadSignature},
		{"too far ahead", connector.Config{}, headers(connector.MockBankSandboxWebhookSecret, strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10), body), body, connector.ErrBadSignature},
		{"signed but not a notification", connector.Config{}, headers(connector.MockBankSandboxWebhookSecret, ts, []byte(`{}`)), []byte(`{}`), connector.ErrNotificationMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := connector.MockBank{}.VerifyNotification(tc.cfg, tc.h, tc.body, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want == nil && (n.ID != "mbn_1" || n.Reference != "ref-1" || n.ProcessorID != "mbq_1" || n.Result.Outcome != coreapi.OutcomeSucceeded) {
				t.Fatalf("notification %+v", n)
			}
		})
	}
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
