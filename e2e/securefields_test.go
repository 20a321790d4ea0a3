package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payorch/e2e/stack"
)

// The secure card fields in a real browser (Debian's chromium, driven by
// playwright-core from vault-proxy/securefields/test/browser.test.mjs):
// a merchant's page on http://localhost:<port> embeds the fields served
// by vault-proxy on https://127.0.0.1:<port>, a different origin. This
// test is the merchant's server: it starts the product, allows the page's
// origin, serves the page and a few calls the browser test makes to it
// (a new checkout session, paying with one, expiring one), and runs the
// browser test against them. The browser test proves the fields work end
// to end and that only metadata ever reaches the page (see its cases).
//
// Without chromium or the package's node_modules it skips, unless
// PAYORCH_BROWSER_TEST=required (make test, .ci/run), where it fails.
func TestSecureFieldsInABrowser(t *testing.T) {
	pkg, err := filepath.Abs("../vault-proxy/securefields")
	if err != nil {
		t.Fatal(err)
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, nerr := exec.LookPath("node")
	_, cerr := os.Stat(chromium)
	_, merr := os.Stat(filepath.Join(pkg, "node_modules", "playwright-core"))
	if nerr != nil || cerr != nil || merr != nil {
		msg := fmt.Sprintf("the browser test needs node, %s and vault-proxy/securefields/node_modules (npm ci there): %v %v %v", chromium, nerr, cerr, merr)
		if os.Getenv("PAYORCH_BROWSER_TEST") == "required" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	s := stack.Start(t)
	tok := s.Token(t, checkoutScopes...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	merchant := fmt.Sprintf("http://localhost:%d", port)
	// The same server on 127.0.0.1 is another origin: a foreign page.
	foreign := fmt.Sprintf("http://127.0.0.1:%d", port)
	if st, _, raw := vp(t, s, tok, http.MethodPut, "/checkout/settings", map[string]any{"allowed_origins": []string{merchant}}); st != http.StatusOK {
		t.Fatalf("allowed origins: %d %s", st, raw)
	}
	checkFieldPageHeaders(t, s, tok, merchant, foreign)

	var integrity struct {
		Loader string `json:"securefields.js"`
	}
	raw, err := os.ReadFile(filepath.Join(pkg, "dist", "integrity.json"))
	if err != nil || json.Unmarshal(raw, &integrity) != nil {
		t.Fatalf("integrity.json: %v", err)
	}
	srv := &http.Server{Handler: merchantSite(s, tok, integrity.Loader, foreign), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "--test-concurrency=1", "test/")
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "MERCHANT_URL="+merchant, "FOREIGN_URL="+foreign, "VAULT_URL="+s.PublicURL, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	t.Logf("browser test:\n%s", out)
	if err != nil {
		t.Fatalf("the browser test failed: %v", err)
	}
	s.Logs.AssertNoPAN(t, "4111111111111111", "5555555555554444", "378282246310005")
	for _, l := range s.Logs.Lines() {
		if strings.Contains(l, "/checkout/sessions/") && !strings.Contains(l, "…") {
			t.Errorf("a checkout session path is logged unmasked: %s", l)
		}
	}
}

// checkFieldPageHeaders: the field page carries a strict CSP whose
// frame-ancestors are the merchant account's allowed origins; it is 403
// for an origin not allowed and 404 for an unknown session.
func checkFieldPageHeaders(t *testing.T, s *stack.Stack, tok, merchant, foreign string) {
	t.Helper()
	id := newCheckoutSession(t, s, tok, nil)["id"].(string)
	get := func(session, origin string) (*http.Response, string) {
		resp, err := s.PublicClient.Get(s.PublicURL + "/securefields/field.html?field=number&channel=c&session=" + session + "&origin=" + origin)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get(id, merchant)
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != http.StatusOK || !strings.Contains(csp, "frame-ancestors "+merchant) || !strings.Contains(csp, "script-src 'self'") ||
		strings.Contains(csp, "unsafe-inline") || strings.Contains(body, "<script>") {
		t.Fatalf("field page: %d CSP %q", resp.StatusCode, csp)
	}
	if resp, _ := get(id, foreign); resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("field page for an origin not allowed: %d %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	if resp, _ := get("6f1c1d2e-0000-4000-8000-000000000000", merchant); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("field page for an unknown session: %d", resp.StatusCode)
	}
	resp, _ = func() (*http.Response, string) {
		r, err := s.PublicClient.Get(s.PublicURL + "/securefields/securefields.js")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r, string(b)
	}()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("loader: %d %v", resp.StatusCode, resp.Header)
	}
}

// merchantPage is the merchant's checkout page: the loader from
// vault-proxy with subresource integrity, a place for each field, and a
// record of every message event the page receives (the browser test
// searches it for card data). The browser test drives SecureFields from
// the page's own context.
var merchantPage = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout</title>
<script src="{{.Vault}}/securefields/securefields.js" integrity="{{.Integrity}}" crossorigin="anonymous"></script>
<style>.field { height: 40px; border: 1px solid #767676; margin: 4px 0; }</style>
</head><body><main><h1>Checkout</h1>
<div id="card-number" class="field"></div>
<div id="expiry-date" class="field"></div>
<div id="security-code" class="field"></div>
<button id="pay" type="button">Pay</button>
{{if .Foreign}}<iframe id="foreign" title="Another site" src="{{.Foreign}}/foreign.html"></iframe>{{end}}
</main>
<script>
window.seenMessages = [];
window.addEventListener("message", (e) => { window.seenMessages.push({ origin: e.origin, data: JSON.stringify(e.data) }); });
</script>
</body></html>`))

// foreignPage is another origin's page inside the merchant's page: when
// told the fields' channel, it forges messages to the page and to the
// fields.
const foreignPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Foreign</title></head><body><main>
<p>Another site</p>
<script>
window.addEventListener("message", (e) => {
  if (!e.data || e.data.forge !== true) return;
  const ch = e.data.channel;
  const tag = "payorch-secure-fields";
  // To the merchant's page, as if a field had vaulted or changed.
  parent.postMessage({ tag, channel: ch, field: "number", type: "vaulted", card: { last4: "0000" } }, "*");
  parent.postMessage({ tag, channel: ch, field: "number", type: "failed", error: { code: "forged", message: "forged" } }, "*");
  // To each field, as if the page asked it to reset or submit.
  for (let i = 0; i < parent.frames.length; i++) {
    for (const field of ["number", "expiryDate", "securityCode"]) {
      parent.frames[i].postMessage({ tag, channel: ch, field, type: "reset" }, "*");
      parent.frames[i].postMessage({ tag, channel: ch, field, type: "setMasked", masked: true }, "*");
    }
  }
});
</script></main></body></html>`

func merchantSite(s *stack.Stack, tok, integrity, foreign string) http.Handler {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, sri string, withForeign bool) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		data := map[string]string{"Vault": s.PublicURL, "Integrity": sri}
		if withForeign {
			data["Foreign"] = foreign
		}
		_ = merchantPage.Execute(w, data)
	}
	mux.HandleFunc("GET /checkout.html", func(w http.ResponseWriter, r *http.Request) {
		page(w, integrity, r.URL.Query().Get("foreign") == "1")
	})
	mux.HandleFunc("GET /tampered.html", func(w http.ResponseWriter, r *http.Request) {
		page(w, "sha384-"+strings.Repeat("A", 64), false)
	})
	mux.HandleFunc("GET /foreign.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, foreignPage)
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	// The merchant's server side: what its own backend would do with its
	// bearer token, which never reaches the browser.
	// (These run on the server's goroutines: failures are answered, for
	// the browser test to report, never t.Fatal.)
	call := func(w http.ResponseWriter, path string, body any) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, s.PublicURL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.PublicClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}
	mux.HandleFunc("POST /server/session", func(w http.ResponseWriter, r *http.Request) {
		call(w, "/checkout/sessions", map[string]any{"amount": 1299, "currency": "EUR"})
	})
	mux.HandleFunc("POST /server/pay", func(w http.ResponseWriter, r *http.Request) {
		call(w, "/transactions", checkoutPayment(r.URL.Query().Get("session"), 1299))
	})
	mux.HandleFunc("POST /server/expire", func(w http.ResponseWriter, r *http.Request) {
		conn, err := pgx.Connect(r.Context(), s.DBs.VaultDSN)
		if err == nil {
			defer conn.Close(context.Background())
			_, err = conn.Exec(r.Context(), `UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, r.URL.Query().Get("session"))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	})
	return mux
}
