package httpapi_test

import (
	"log/slog"
	"net"
	"testing"

	"github.com/payorch/shared/logging"
	"github.com/payorch/vault-proxy/httpapi"
	"github.com/valyala/fasthttp"
)

// Every request writes one access line; a card number in the path (a
// mistyped URL) is redacted whichever way the line is written.
func TestAccessLine(t *testing.T) {
	const pan = "4111111111111111"
	for _, tc := range []struct {
		path, wantPath string
		status         int
	}{
		{"/things/abc", "/things/abc", fasthttp.StatusNoContent},
		{"/things/" + pan, "/things/" + logging.PANReplacement, fasthttp.StatusNoContent},
		{"/nowhere/" + pan, "/nowhere/" + logging.PANReplacement, fasthttp.StatusNotFound},
		{`/things/a"b`, `/things/a"b`, fasthttp.StatusNoContent}, // escaped by slog
	} {
		var logs logging.LogCatcher
		rt := httpapi.NewRouter(logging.New(&logs, slog.LevelInfo).With("service", "vault-proxy"))
		rt.Handle(fasthttp.MethodGet, "/things/{id}", func(ctx *fasthttp.RequestCtx) error {
			ctx.SetStatusCode(fasthttp.StatusNoContent)
			return nil
		})
		var req fasthttp.Request
		req.SetRequestURI(tc.path)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
		rt.Handler()(&ctx)

		logs.AssertNoPAN(t, pan)
		want := logging.LoggedAccess{Msg: logging.AccessMessage, Service: "vault-proxy", Method: "GET", Path: tc.wantPath,
			Status: tc.status, RequestID: string(ctx.Response.Header.Peek("X-Request-Id")), HasDuration: true}
		if got, ok := logs.OnlyAccessLine(t); ok && (got != want || want.RequestID == "") {
			t.Errorf("%s: access line %+v, want %+v", tc.path, got, want)
		}
	}
}
