package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/shared/logging"
)

// Every request writes one access line with the request id from the
// context; a card number in the path is redacted whichever way the line
// is written.
func TestAccessLine(t *testing.T) {
	const pan = "4111111111111111"
	cases := []struct {
		name, path, wantPath string
		status               int
	}{
		{"plain", "/things/abc", "/things/abc", http.StatusNoContent},
		{"a card number in the path", "/things/" + pan, "/things/" + logging.PANReplacement, http.StatusNoContent},
		{"an unknown route", "/nowhere/" + pan, "/nowhere/" + logging.PANReplacement, http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs logging.LogCatcher
			rt := httpapi.NewRouter(logging.New(&logs, slog.LevelInfo).With("service", "core-api"))
			rt.Handle("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) error {
				w.WriteHeader(http.StatusNoContent)
				return nil
			})
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))

			logs.AssertNoPAN(t, pan)
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("%d lines: %s", len(lines), logs.String())
			}
			var got struct {
				Msg, Service, Method, Path string
				RequestID                  string `json:"request_id"`
				Status                     int
				Duration                   *int64
			}
			if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
				t.Fatalf("%v: %s", err, lines[0])
			}
			id := rec.Header().Get("X-Request-Id")
			if got.Msg != logging.AccessMessage || got.Service != "core-api" || got.Method != "GET" || got.Path != tc.wantPath ||
				got.Status != tc.status || got.RequestID == "" || got.RequestID != id || got.Duration == nil {
				t.Fatalf("access line %s (request id %q)", lines[0], id)
			}
		})
	}
}
