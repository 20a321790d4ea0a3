package app

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/logging"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/vault-proxy/httpapi"
)

// TestMalformedRequestsLogNoCardNumber: fasthttp logs, through the
// service's logger, why it could not read a request, and by default quotes
// the request's bytes in that line with Go's %q. A quoted byte such as
// 0xa1 (Latin-1 '¡') becomes the text `\xa1`, whose last hex digit is then
// glued to a card number that follows it: the redactor, which masks
// Luhn-valid runs of 12-19 digits, sees 17 digits that fail the check and
// lets the card number through. Each request goes to a real listener made
// by serve, as the service's are.
func TestMalformedRequestsLogNoCardNumber(t *testing.T) {
	var pan string // the first of the published test cards, in order
	for p := range card.TestCards() {
		if pan == "" || p < pan {
			pan = p
		}
	}
	glued := "\xa1" + pan // quoted by %q as `\xa1<pan>`
	for _, tc := range []struct {
		name, request string
	}{
		{"extra space in the request line", "GET  /x HTTP/1.1\r\nHost: a\r\nX-Card: " + glued + "\r\n\r\n"},
		{"no method", " /x HTTP/1.1\r\nHost: a\r\nX-Card: " + glued + "\r\n\r\n"},
		{"no HTTP version", "GET /" + glued + "\r\nHost: a\r\n\r\n"},
		{"bad HTTP version", "GET /x HTTP/9\r\nHost: a\r\nX-Card: " + glued + "\r\n\r\n"},
		{"header line without a colon", "GET /x HTTP/1.1\r\nHost: a\r\nX-Card " + glued + "\r\n\r\n"},
		{"invalid header name", "GET /x HTTP/1.1\r\nHost: a\r\nX\x01Card: " + glued + "\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logging.LogCatcher
			status := serveOnce(t, &logs, tc.request)
			if status != http.StatusBadRequest {
				t.Errorf("status %d, want 400", status)
			}
			logs.AssertNoPAN(t, pan)
		})
	}
}

// serveOnce starts a listener as the service does, with its log going to
// logs, writes request to it raw and returns the answer's status once
// fasthttp has logged why it refused the request.
func serveOnce(t *testing.T, logs *logging.LogCatcher, request string) int {
	t.Helper()
	log := logging.New(logs, slog.LevelDebug)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &Main{Log: log}
	l, err := m.serve(ln, "", nil, httpapi.NewRouter(log), "public")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.srv.Shutdown() }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	_ = resp.Body.Close()
	// fasthttp logs once it has closed the connection.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "error when serving connection"); {
		if time.Now().After(deadline) {
			t.Fatalf("fasthttp logged no error line; log: %s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return resp.StatusCode
}
