package simulator_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/simulator"
)

func TestCheckEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  config.Environment
		want string // "" accepts
	}{
		{config.Development, ""},
		{config.Sandbox, ""},
		{config.Production, "ENVIRONMENT: mock-x is a sandbox simulator and never runs in production"},
		{config.Environment("staging"), "ENVIRONMENT must be development or sandbox"},
	} {
		err := simulator.CheckEnvironment("mock-x", tc.env)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.env, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: accepted, want %q", tc.env, tc.want)
		}
	}
}

func TestServerServesAndCloses(t *testing.T) {
	var s simulator.Server
	if err := s.Close(); err != nil {
		t.Fatalf("close before serving: %v", err)
	}
	var s2 simulator.Server
	if err := s2.Listen(context.Background(), "mock-x", "127.0.0.1:0", nil); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", simulator.Healthz)
	s2.Serve(mux, slog.New(slog.NewTextHandler(io.Discard, nil)))
	resp, err := http.Get(s2.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || strings.TrimSpace(string(b)) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := http.Get(s2.URL() + "/healthz"); err == nil {
		t.Fatal("served after Close")
	}
}

func TestListenReportsTheAddress(t *testing.T) {
	var s simulator.Server
	err := s.Listen(context.Background(), "mock-x", "256.0.0.1:1", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "mock-x: listener: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestJSONArrayOrAbsent(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"", true}, {"null", true}, {" null ", true}, {"[]", true}, {` [{"name":"x"}]`, true},
		{"{}", false}, {`"x"`, false}, {"1", false}, {"nul", false}, {"true", false},
	} {
		if got := simulator.JSONArrayOrAbsent(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("JSONArrayOrAbsent(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
