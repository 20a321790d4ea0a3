package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/e2e/stack"
	vpapp "github.com/payorch/vault-proxy/app"
)

// lossyLink stands between vault-proxy and core-api and passes everything
// on, except that, once armed, it loses the next POST /payment-methods (or
// path):
// its answer (core-api stores the payment method; vault-proxy hears
// nothing, or a 504 as core-api's deadline can give after its commit) or
// the request itself (core-api never sees it).
type lossyLink struct {
	lose atomic.Value // "answer", "504", "request" or ""
	srv  *httptest.Server
	// path is the POST whose exchange is lost: "/payment-methods" when
	// empty. Set before the stack starts.
	path string
}

// option points vault-proxy at the link, in front of core-api.
func (l *lossyLink) option(t *testing.T) stack.Option {
	return func(v *vpapp.Config, _ *coreapp.Config) {
		core, err := url.Parse(v.CoreAPIURL)
		if err != nil {
			t.Fatal(err)
		}
		pass := httputil.NewSingleHostReverseProxy(core)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			lose, _ := l.lose.Load().(string)
			path := l.path
			if path == "" {
				path = "/payment-methods"
			}
			if r.Method != http.MethodPost || r.URL.Path != path || lose == "" || !l.lose.CompareAndSwap(lose, "") {
				pass.ServeHTTP(w, r)
				return
			}
			if lose == "answer" || lose == "504" {
				out := r.Clone(context.Background())
				out.URL.Scheme, out.URL.Host, out.RequestURI = core.Scheme, core.Host, ""
				resp, err := http.DefaultTransport.RoundTrip(out)
				if err != nil {
					t.Errorf("lossy link: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if lose == "504" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusGatewayTimeout)
				_, _ = io.WriteString(w, `{"type":"error","code":"gateway_timeout","status":504,"message":"the request did not complete in time","details":[]}`)
				return
			}
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the connection drops: no answer at all
			}
		}))
		t.Cleanup(srv.Close)
		l.srv = srv
		v.CoreAPIURL = srv.URL
	}
}

// A card vaulted while core-api's answer to the payment method is lost:
// vault-proxy sends the creation again (its id is the token, stored at
// most once). Stored by the first send, it is read back (201); never seen,
// the second send stores it (201); refused on the second send, the card is
// shredded; core-api down (nothing could be sent), the card is shredded at
// once. Nothing is lost and nothing is left behind.
func TestPaymentMethodWhoseCoreAnswerIsLost(t *testing.T) {
	var link lossyLink
	s := stack.Start(t, link.option(t))
	tok := s.Token(t, pmScopes...)
	card := map[string]any{"method": "card", "number": "4111111111111111", "expiration_date": expiryIn(2)}

	link.lose.Store("answer")
	code, raw := s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", tok, card)
	if code != http.StatusCreated {
		t.Fatalf("stored, answer lost: %d %s", code, raw)
	}
	var pm struct{ ID string }
	if err := json.Unmarshal(raw, &pm); err != nil || pm.ID == "" {
		t.Fatalf("answer %s", raw)
	}
	if code, _ := internalCard(t, s, "default", pm.ID); code != http.StatusOK {
		t.Fatalf("the vaulted card of a stored payment method: %d", code)
	}

	// Stored, but answered 504 (a deadline after the commit): a server
	// error is not a refusal, and the card is not shredded under a
	// payment method core-api holds.
	link.lose.Store("504")
	code, raw = s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", tok, card)
	var late struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal(raw, &late) != nil || late.ID == "" {
		t.Fatalf("stored, answered 504: %d %s", code, raw)
	}
	if code, _ := internalCard(t, s, "default", late.ID); code != http.StatusOK {
		t.Fatalf("the vaulted card of a payment method stored before a 504: %d", code)
	}

	// The request itself lost: sent again, core-api stores it now.
	link.lose.Store("request")
	code, raw = s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", tok, card)
	if code != http.StatusCreated {
		t.Fatalf("request lost: %d %s", code, raw)
	}
	var second struct{ ID string }
	if err := json.Unmarshal(raw, &second); err != nil || second.ID == "" || second.ID == pm.ID {
		t.Fatalf("answer %s", raw)
	}
	if code, _ := internalCard(t, s, "default", second.ID); code != http.StatusOK {
		t.Fatalf("the vaulted card of the payment method stored on the second send: %d", code)
	}
	if n := countRows(t, s.DBs.CoreDSN, "payment_methods"); n != 3 {
		t.Fatalf("%d payment methods in core, want 3", n)
	}

	// Refused on the second send (a buyer that does not exist): the
	// refusal is passed back, and the card shredded.
	before := countRows(t, s.DBs.VaultDSN, "vaulted_cards")
	link.lose.Store("request")
	refused := map[string]any{"method": "card", "number": "4111111111111111", "expiration_date": expiryIn(2), "buyer_id": "00000000-0000-4000-8000-000000000000"}
	if code, raw := s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", tok, refused); code != http.StatusBadRequest {
		t.Fatalf("refused on the second send: %d %s", code, raw)
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != before {
		t.Fatalf("%d vaulted cards after a refused creation, want %d", n, before)
	}

	// core-api down. The first call may find a kept-alive connection
	// closed under it, which cannot tell whether core-api got the request
	// (a 502 either way); once a connection is refused, nothing was sent,
	// and the card is shredded at once.
	link.srv.Close()
	if code, raw := s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", tok, card); code != http.StatusBadGateway {
		t.Fatalf("core-api just gone: %d %s", code, raw)
	}
	before = countRows(t, s.DBs.VaultDSN, "vaulted_cards")
	code, raw = s.Do(t, s.PublicClient, "POST", s.PublicURL+"/payment-methods", tok, card)
	if code != http.StatusBadGateway || apiError(t, raw).Message != "core-api is unreachable; nothing was stored" {
		t.Fatalf("core-api down: %d %s", code, raw)
	}
	if n := countRows(t, s.DBs.VaultDSN, "vaulted_cards"); n != before {
		t.Fatalf("%d vaulted cards after a creation while core-api was down, want %d", n, before)
	}
}
