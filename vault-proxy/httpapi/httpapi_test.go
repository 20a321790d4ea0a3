package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/payorch/shared/logging"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/valyala/fasthttp"
)

// Every request writes one access line; a card number in the path (a
// mistyped URL) is redacted whichever way the line is written.
func TestAccessLine(t *testing.T) {
	const pan = "4111111111111111"
	cases := []struct {
		name, path, wantPath string
		status               int
	}{
		{"plain", "/things/abc", "/things/abc", fasthttp.StatusNoContent},
		{"a card number in the path", "/things/" + pan, "/things/" + logging.PANReplacement, fasthttp.StatusNoContent},
		{"an unknown route", "/nowhere/" + pan, "/nowhere/" + logging.PANReplacement, fasthttp.StatusNotFound},
		{"a path that needs escaping", `/things/a"b`, `/things/a"b`, fasthttp.StatusNoContent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs logging.LogCatcher
			rt := httpapi.NewRouter(logging.New(&logs, slog.LevelInfo).With("service", "vault-proxy"))
			rt.Handle(fasthttp.MethodGet, "/things/{id}", func(ctx *fasthttp.RequestCtx) error {
				ctx.SetStatusCode(fasthttp.StatusNoContent)
				return nil
			})
			var req fasthttp.Request
			req.Header.SetMethod(fasthttp.MethodGet)
			req.SetRequestURI(tc.path)
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
			rt.Handler()(&ctx)

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
			id := string(ctx.Response.Header.Peek("X-Request-Id"))
			if got.Msg != logging.AccessMessage || got.Service != "vault-proxy" || got.Method != "GET" || got.Path != tc.wantPath ||
				got.Status != tc.status || got.RequestID == "" || got.RequestID != id || got.Duration == nil {
				t.Fatalf("access line %s (request id %q)", lines[0], id)
			}
		})
	}
}
