package connector_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/sandbox/mockantifraud"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/secret"
)

func startMockAntiFraud(t *testing.T) *mockantifraud.Main {
	t.Helper()
	m, err := mockantifraud.New(mockantifraud.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// Each API version's decisions through the real simulator, each request
// in its own version's shape (the simulator decodes strictly: a body of
// the other shape would be refused), and a failure as an error.
func TestMockAntiFraudVersions(t *testing.T) {
	m := startMockAntiFraud(t)
	reg := connector.NewRegistry(connector.MockAntiFraud{BaseURL: m.URL()})
	af, err := reg.AntiFraud(connector.MockAntiFraudName)
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"", connector.AntiFraudV21, connector.AntiFraudV102} {
		cfg := connector.Config{Settings: connector.Values{}, Credentials: connector.Secrets{"api_key": secret.New("af_test_k")}}
		if version != "" {
			cfg.Settings["api_version"] = version
		}
		for fingerprint, want := range map[string]string{"ok": coreapi.AntiFraudAccept, "x-reject": coreapi.AntiFraudReject, "review-me": coreapi.AntiFraudReview, "error": ""} {
			got, err := af.Assess(context.Background(), connector.AntiFraudRequest{Reference: "t1", Amount: 100, Currency: "EUR",
				Fingerprint: fingerprint, CardBIN: "411111", CardScheme: "visa", Config: cfg,
				CartItems: []coreapi.CartItem{{Name: "A", Quantity: 1, UnitAmount: 100}}})
			if got != want || (want == "") != (err != nil) {
				t.Errorf("%q %s: %q %v, want %q", version, fingerprint, got, err, want)
			}
		}
		last := m.Requests.All()[len(m.Requests.All())-1]
		wantVersion, wantPath := connector.AntiFraudV21, mockantifraud.Path21
		if version == connector.AntiFraudV102 {
			wantVersion, wantPath = connector.AntiFraudV102, mockantifraud.Path102
		}
		if last.Version != wantVersion || last.Path != wantPath || last.APIKey != "af_test_k" {
			t.Errorf("%q: recorded %+v", version, last)
		}
	}
}

// The simulator refuses a body of the other version's shape and a
// request without a key.
func TestMockAntiFraudRefusals(t *testing.T) {
	m := startMockAntiFraud(t)
	post := func(path, key string, body any) int {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, m.URL()+path, strings.NewReader(string(raw)))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(mockantifraud.Path21, "k", map[string]any{"transaction": map[string]any{}}); code != http.StatusBadRequest {
		t.Errorf("v10.2 body at v2.1: %d", code)
	}
	if code := post(mockantifraud.Path102, "k", map[string]any{"order_id": "x"}); code != http.StatusBadRequest {
		t.Errorf("v2.1 body at v10.2: %d", code)
	}
	if code := post(mockantifraud.Path21, "", map[string]any{}); code != http.StatusUnauthorized {
		t.Errorf("no key: %d", code)
	}
	if len(m.Requests.All()) != 0 {
		t.Errorf("refused requests were recorded: %v", m.Requests.All())
	}
}
