package webhookhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payorch/core-api/webhooks"
)

// The address rules run on the exact address being connected, before any
// packet leaves: these destinations are judged, never dialled.
func TestControlRefusesInternalAddresses(t *testing.T) {
	cases := []struct {
		addr          string
		allowLoopback bool
		want          string // "" when allowed
	}{
		{"127.0.0.1:80", false, "destination refused: address_loopback"},
		{"127.0.0.1:80", true, ""},
		{"[::1]:443", true, ""},
		{"10.1.2.3:443", true, "destination refused: address_private"},
		{"192.168.0.10:443", false, "destination refused: address_private"},
		{"169.254.169.254:80", true, "destination refused: address_link_local"},
		{"100.64.0.1:443", false, "destination refused: address_shared_cgnat"},
		{"[fd00:ec2::254]:80", false, "destination refused: address_private"},
		{"0.0.0.0:80", true, "destination refused: address_this_network"},
		{"93.184.216.34:443", false, ""},
	}
	for _, c := range cases {
		err := controlCheck(c.allowLoopback)("tcp", c.addr, nil)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s (loopback allowed %v): %q, want %q", c.addr, c.allowLoopback, got, c.want)
		}
	}
}

// Names that only resolve inside a network are refused before DNS; the
// recorded error names the rule.
func TestSendRefusesInternalNames(t *testing.T) {
	s := New(true, time.Second)
	for _, host := range []string{"metadata.google.internal", "vault", "db.svc.cluster.local"} {
		a := s.Send(context.Background(), webhooks.Message{URL: "http://" + host + "/hook", Body: []byte("{}")})
		if a.Code != 0 || !strings.HasPrefix(a.Error, "destination refused: name_") {
			t.Errorf("%s: answer %+v, want a name rule's refusal", host, a)
		}
	}
}

// Redirects are answers, not followed.
func TestSendDoesNotFollowRedirects(t *testing.T) {
	var followed bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	a := New(true, time.Second).Send(context.Background(), webhooks.Message{URL: redirect.URL, Body: []byte("{}")})
	if a.Code != http.StatusTemporaryRedirect || followed {
		t.Fatalf("answer %+v, followed %v", a, followed)
	}
}

// An endless answer is read up to the bound, no further: the attempt
// costs that buffer, whatever the endpoint sends.
func TestSendReadsABoundedBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("z", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	a := New(true, 5*time.Second).Send(context.Background(), webhooks.Message{URL: srv.URL, Body: []byte("{}")})
	if a.Code != http.StatusOK || len(a.Body) != webhooks.MaxBodyRead || !a.BodyCut {
		t.Fatalf("answer %d, %d bytes read, cut %v", a.Code, len(a.Body), a.BodyCut)
	}
}

// A body that stalls is read until the attempt's deadline only: what
// came is kept, flagged as cut.
func TestSendStopsReadingAtTheDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer func() { close(release); srv.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	a := New(true, 5*time.Second).Send(ctx, webhooks.Message{URL: srv.URL, Body: []byte("{}")})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Send took %s past a 300ms deadline", took)
	}
	if a.Code != http.StatusAccepted || string(a.Body) != "partial" || !a.BodyCut {
		t.Fatalf("answer %d %q, cut %v", a.Code, a.Body, a.BodyCut)
	}
}
