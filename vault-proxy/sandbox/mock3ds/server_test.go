package mock3ds_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/shared/config"
	"github.com/payorch/vault-proxy/sandbox/mock3ds"
)

func start(t *testing.T) string {
	t.Helper()
	m, err := mock3ds.New(mock3ds.Config{Environment: config.Sandbox, Addr: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m.URL()
}

func authenticate(t *testing.T, base string, in mock3ds.Request) (int, mock3ds.Answer, string) {
	t.Helper()
	b, _ := json.Marshal(in)
	resp, err := http.Post(base+mock3ds.AuthenticationsPath, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a mock3ds.Answer
	_ = json.Unmarshal(raw, &a)
	return resp.StatusCode, a, string(raw)
}

func ptr[T any](v T) *T { return &v }

func TestFirstMatchWins(t *testing.T) {
	base := start(t)
	const visa, mastercard = "4000000000001091", "5555555555554444"
	scenarios := []mock3ds.Scenario{
		{ID: "by-card", Conditions: mock3ds.Conditions{CardNumber: ptr(mastercard)},
			Outcome: mock3ds.Outcome{Version: "2.1.0", Authentication: mock3ds.Status{"A"}}},
		{ID: "by-email", Conditions: mock3ds.Conditions{EmailAddress: ptr("JANE@example.com"), Amount: ptr[int64](1500)},
			Outcome: mock3ds.Outcome{Version: "2.2.0", Authentication: mock3ds.Status{"C"}, Result: &mock3ds.Status{"Y"}}},
		{ID: "by-bin", Conditions: mock3ds.Conditions{BIN: ptr("400000")},
			Outcome: mock3ds.Outcome{Version: "2.3.1", Authentication: mock3ds.Status{"R"}}},
	}
	for _, tc := range []struct {
		name, card, email string
		want              string // the scenario, "" for none
		status, eci       string
	}{
		{"the card's own scenario", mastercard, "jane@example.com", "by-card", "A", "01"},
		{"the next one", visa, "jane@example.com", "by-email", "C", ""},
		{"by BIN", visa, "joe@example.com", "by-bin", "R", ""},
		{"none", "4111111111111111", "joe@example.com", "", "Y", "05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, a, raw := authenticate(t, base, mock3ds.Request{Amount: 2000, Currency: "EUR", TransactionAmount: 1500,
				Card: mock3ds.Card{Number: tc.card}, Buyer: mock3ds.Buyer{EmailAddress: tc.email}, Scenarios: scenarios})
			if code != 200 || a.TransactionStatus != tc.status || (tc.want == "") != (a.ScenarioID == nil) || (a.ScenarioID != nil && *a.ScenarioID != tc.want) {
				t.Fatalf("%d %s", code, raw)
			}
			if strings.Contains(raw, tc.card) || strings.Contains(raw, mastercard) {
				t.Fatalf("the answer quotes a card number: %s", raw)
			}
			if tc.eci != "" {
				cavv, err := base64.StdEncoding.DecodeString(a.Result.AuthenticationValue)
				if err != nil || len(a.Result.AuthenticationValue) != 28 || len(cavv) != 20 || a.Result.ECI != tc.eci {
					t.Fatalf("result %+v", a.Result)
				}
			} else if a.Result != nil {
				t.Fatalf("data for %s: %+v", a.TransactionStatus, a.Result)
			}
			if tc.status == "C" && (a.Challenge == nil || a.Challenge.TransactionStatus != "Y" || a.Challenge.Result == nil || a.Challenge.Result.ECI != "05") {
				t.Fatalf("challenge %s", raw)
			}
		})
	}
}

func TestECIByScheme(t *testing.T) {
	for _, tc := range []struct{ scheme, status, want string }{
		{"visa", "Y", "05"}, {"visa", "A", "06"}, {"visa", "N", "07"},
		{"mastercard", "Y", "02"}, {"mastercard", "A", "01"}, {"mastercard", "N", "00"},
		{"maestro", "Y", "02"}, {"amex", "Y", "05"},
	} {
		if got := mock3ds.ECI(tc.scheme, tc.status); got != tc.want {
			t.Errorf("ECI(%s, %s) = %s, want %s", tc.scheme, tc.status, got, tc.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	base := start(t)
	for _, tc := range []struct {
		name string
		in   mock3ds.Request
		code string
	}{
		{"not a card number", mock3ds.Request{Card: mock3ds.Card{Number: "{{ CARD_NUMBER_1 }}"}}, "invalid_card"},
		{"a challenge without its result", mock3ds.Request{Card: mock3ds.Card{Number: "4111111111111111"},
			Scenarios: []mock3ds.Scenario{{ID: "x", Outcome: mock3ds.Outcome{Authentication: mock3ds.Status{"C"}}}}}, "invalid_scenario"},
	} {
		code, _, raw := authenticate(t, base, tc.in)
		if code != 400 || !strings.Contains(raw, `"`+tc.code+`"`) {
			t.Errorf("%s: %d %s", tc.name, code, raw)
		}
	}
	if _, err := mock3ds.New(mock3ds.Config{Environment: config.Production}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("mock-3ds started in production")
	}
}
