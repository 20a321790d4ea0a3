package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/auth"
	vpapp "github.com/payorch/vault-proxy/app"
)

const (
	dashboardPassword = "dashboard-test-password"
	dashboardIssuer   = "payorch-test-dashboard"
)

// startDashboard is the stack with the dashboard's sign-in on, served
// (as the browser sees it) from origin.
func startDashboard(t *testing.T, origin string) (*stack.Stack, *dashboard.Service) {
	t.Helper()
	keyDir := t.TempDir()
	// The key exists before vault-proxy starts, as deploy/local/run.sh
	// makes it: vault-proxy loads its public half.
	if _, err := auth.LoadSigningKeyDir(keyDir); err != nil {
		t.Fatal(err)
	}
	s := stack.Start(t, func(v *vpapp.Config, c *coreapp.Config) {
		c.Dashboard = coreapp.DashboardConfig{KeyDir: keyDir, Issuer: dashboardIssuer, Origin: origin}
		v.DashboardKeysFile, v.DashboardIssuer, v.DashboardOrigin = filepath.Join(keyDir, auth.PublicKeysFile), dashboardIssuer, origin
	})
	return s, coreapp.NewDashboardService(postgrestest.Open(t, s.DBs.CoreDSN))
}

// browser is a dashboard page's view of core-api: the session cookie, the
// CSRF token and the origin it sends.
type browser struct {
	s      *stack.Stack
	origin string
	cookie string
	csrf   string
}

// do sends a request as the page would, with the session cookie and, when
// set, the CSRF header; it returns the answer and its raw body.
func (b *browser) do(t *testing.T, method, path string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, "http://"+b.s.CoreAPI.Addr()+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	if b.cookie != "" {
		req.Header.Set("Cookie", httpapi.SessionCookie+"="+b.cookie)
	}
	if b.csrf != "" {
		req.Header.Set(httpapi.CSRFHeader, b.csrf)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	b.s.CheckAPI(t, req, raw, resp, out)
	return resp, out
}

// signIn signs b in and keeps its cookie and CSRF token.
func (b *browser) signIn(t *testing.T, email string) map[string]any {
	t.Helper()
	resp, body := b.do(t, http.MethodPost, "/dashboard/sign-in", map[string]string{"email": email, "password": dashboardPassword})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in = %d %s", resp.StatusCode, body)
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == httpapi.SessionCookie {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" {
		t.Fatalf("session cookie = %+v; want HttpOnly, Secure, SameSite=Strict, host-only on /", c)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("sign-in Cache-Control = %q", resp.Header.Get("Cache-Control"))
	}
	var sess map[string]any
	if err := json.Unmarshal(body, &sess); err != nil {
		t.Fatal(err)
	}
	b.cookie, b.csrf = c.Value, sess["csrf_token"].(string)
	if strings.Contains(string(body), c.Value) {
		t.Error("the sign-in body holds the session token: it must live in the HttpOnly cookie only")
	}
	return sess
}

// token asks for a bearer token and returns it.
func (b *browser) token(t *testing.T) map[string]any {
	t.Helper()
	resp, body := b.do(t, http.MethodPost, "/dashboard/token", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token = %d %s", resp.StatusCode, body)
	}
	var tok map[string]any
	_ = json.Unmarshal(body, &tok)
	return tok
}

func addDashboardUser(t *testing.T, svc *dashboard.Service, email string, role coreapi.DashboardRole, accounts ...string) {
	t.Helper()
	if _, err := svc.AddUser(context.Background(), dashboard.NewUser{Email: email, Password: dashboardPassword,
		Role: role, MerchantAccountIDs: accounts}); err != nil {
		t.Fatal(err)
	}
}

func errorMessage(body []byte) string {
	var e struct{ Message string }
	_ = json.Unmarshal(body, &e)
	return e.Message
}

func TestDashboardSignInAndToken(t *testing.T) {
	const origin = "https://dashboard.test"
	s, svc := startDashboard(t, origin)
	addDashboardUser(t, svc, "admin@example.com", coreapi.RoleAdmin, "*")
	b := &browser{s: s, origin: origin}

	if resp, body := b.do(t, http.MethodGet, "/dashboard/session", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("session before sign-in = %d %s", resp.StatusCode, body)
	}
	sess := b.signIn(t, "Admin@Example.com")
	user := sess["user"].(map[string]any)
	if user["email"] != "admin@example.com" || user["role"] != "admin" || sess["type"] != "dashboard-session" {
		t.Errorf("session = %v", sess)
	}
	if resp, body := b.do(t, http.MethodGet, "/dashboard/session", nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), b.csrf) {
		t.Errorf("session = %d %s", resp.StatusCode, body)
	}

	tok := b.token(t)
	if tok["token_type"] != "Bearer" || tok["expires_in"].(float64) > 900 || tok["expires_in"].(float64) < 890 ||
		!slices.Equal(tok["merchant_account_ids"].([]any), []any{"*"}) {
		t.Errorf("token = %v", tok)
	}
	bearer := tok["access_token"].(string)
	// The token calls the public API, as a merchant's would.
	if code, body := s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/buyers", bearer,
		map[string]any{"display_name": "Ada"}); code != http.StatusCreated {
		t.Errorf("POST /buyers with the dashboard's token = %d %s", code, body)
	}

	// And vault-proxy's, from the dashboard's origin only (CORS).
	if code, body := s.Do(t, s.PublicClient, http.MethodGet, s.PublicURL+"/vault-forward/configs", bearer, nil); code != http.StatusOK {
		t.Errorf("GET /vault-forward/configs on vault-proxy with the dashboard's token = %d %s", code, body)
	}
	for _, c := range []struct {
		origin, method string
		allowed        bool
	}{
		{origin, http.MethodOptions, true},
		{origin, http.MethodGet, true},
		{"https://evil.test", http.MethodOptions, false},
		{"https://evil.test", http.MethodGet, false},
		{origin, http.MethodDelete, true}, // an error answer (404): the page reads its message
	} {
		path := "/vault-forward/configs"
		if c.method == http.MethodDelete {
			path += "/00000000-0000-4000-8000-000000000000"
		}
		req, _ := http.NewRequest(c.method, s.PublicURL+path, nil)
		req.Header.Set("Origin", c.origin)
		if c.method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		} else {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := s.PublicClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		acao := resp.Header.Get("Access-Control-Allow-Origin")
		if c.allowed != (acao == c.origin) || !c.allowed && acao != "" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("%s from %s: Access-Control-Allow-Origin %q", c.method, c.origin, acao)
		}
		if c.allowed && c.method == http.MethodOptions && (resp.StatusCode != http.StatusNoContent ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")) {
			t.Errorf("preflight = %d %v", resp.StatusCode, resp.Header)
		}
	}

	// Sign-out ends the session: its cookie no longer gets a token.
	if resp, body := b.do(t, http.MethodPost, "/dashboard/sign-out", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sign-out = %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do(t, http.MethodPost, "/dashboard/token", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token after sign-out = %d %s", resp.StatusCode, body)
	}
}

func TestDashboardCSRF(t *testing.T) {
	const origin = "https://dashboard.test"
	s, svc := startDashboard(t, origin)
	addDashboardUser(t, svc, "admin@example.com", coreapi.RoleAdmin, "default")
	b := &browser{s: s, origin: origin}
	b.signIn(t, "admin@example.com")

	for _, c := range []struct {
		name   string
		mutate func(b *browser) []string
	}{
		{"no CSRF header", func(b *browser) []string { b.csrf = ""; return nil }},
		{"another CSRF token", func(b *browser) []string { b.csrf = strings.Repeat("A", 43); return nil }},
		{"another origin", func(b *browser) []string { b.origin = "https://evil.test"; return nil }},
		{"a cross-site fetch", func(b *browser) []string { return []string{"Sec-Fetch-Site", "cross-site"} }},
	} {
		forged := *b
		header := c.mutate(&forged)
		for _, path := range []string{"/dashboard/token", "/dashboard/sign-out"} {
			resp, body := forged.do(t, http.MethodPost, path, nil, header...)
			if resp.StatusCode != http.StatusForbidden || errorMessage(body) == "" {
				t.Errorf("%s: POST %s = %d %s; want 403", c.name, path, resp.StatusCode, body)
			}
		}
	}
	// A sign-in from another origin is refused too (login CSRF).
	evil := &browser{s: s, origin: "https://evil.test"}
	if resp, body := evil.do(t, http.MethodPost, "/dashboard/sign-in",
		map[string]string{"email": "admin@example.com", "password": dashboardPassword}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin sign-in = %d %s", resp.StatusCode, body)
	}
	// The session survived every forged request.
	b.token(t)
}

func TestDashboardViewerAndLockout(t *testing.T) {
	const origin = "https://dashboard.test"
	s, svc := startDashboard(t, origin)
	addDashboardUser(t, svc, "viewer@example.com", coreapi.RoleViewer, "default")
	b := &browser{s: s, origin: origin}
	b.signIn(t, "viewer@example.com")
	bearer := b.token(t)["access_token"].(string)

	if code, body := s.Do(t, http.DefaultClient, http.MethodGet, s.CoreURL+"/transactions", bearer, nil); code != http.StatusOK {
		t.Errorf("a viewer's GET /transactions = %d %s", code, body)
	}
	if code, body := s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/buyers", bearer,
		map[string]any{"display_name": "Ada"}); code != http.StatusForbidden {
		t.Errorf("a viewer's POST /buyers = %d %s; want 403", code, body)
	}
	if code, body := s.Do(t, http.DefaultClient, http.MethodGet, s.CoreURL+"/buyers", bearer, nil,
		"x-service-merchant-account-id", "other"); code != http.StatusForbidden {
		t.Errorf("a viewer's GET /buyers in another account = %d %s; want 403", code, body)
	}

	// Wrong passwords: 401 each, then the lockout (429), which even the
	// right password does not pass.
	guesser := &browser{s: s, origin: origin}
	for i := range dashboard.DefaultMaxFailures {
		resp, body := guesser.do(t, http.MethodPost, "/dashboard/sign-in",
			map[string]string{"email": "viewer@example.com", "password": "not the password"})
		want := http.StatusUnauthorized
		if i == dashboard.DefaultMaxFailures-1 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("guess %d = %d %s; want %d", i+1, resp.StatusCode, body, want)
		}
	}
	resp, body := guesser.do(t, http.MethodPost, "/dashboard/sign-in",
		map[string]string{"email": "viewer@example.com", "password": dashboardPassword})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(errorMessage(body), "too many failed sign-ins") {
		t.Errorf("right password while locked out = %d %s", resp.StatusCode, body)
	}
	// An unknown email answers as a wrong password does.
	resp, body = guesser.do(t, http.MethodPost, "/dashboard/sign-in",
		map[string]string{"email": "nobody@example.com", "password": dashboardPassword})
	if resp.StatusCode != http.StatusUnauthorized || errorMessage(body) != "invalid email or password" {
		t.Errorf("unknown email = %d %s", resp.StatusCode, body)
	}
	// Bad input gets the documented error shape.
	resp, body = guesser.do(t, http.MethodPost, "/dashboard/sign-in", map[string]any{"email": 1})
	if resp.StatusCode != http.StatusBadRequest || errorMessage(body) == "" {
		t.Errorf("malformed sign-in = %d %s", resp.StatusCode, body)
	}
}
