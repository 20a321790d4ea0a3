package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
	return b.signInWith(t, email, dashboardPassword)
}

// signInWith signs b in with password.
func (b *browser) signInWith(t *testing.T, email, password string) map[string]any {
	t.Helper()
	resp, body := b.do(t, http.MethodPost, "/dashboard/sign-in", map[string]string{"email": email, "password": password})
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

func errorCode(body []byte) string {
	var e struct{ Code string }
	_ = json.Unmarshal(body, &e)
	return e.Code
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
	addDashboardUser(t, svc, "victim@example.com", coreapi.RoleViewer, "default")
	victim := userID(t, svc, "victim@example.com")
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
		for _, route := range []string{"POST /dashboard/token", "POST /dashboard/sign-out", "POST /dashboard/password",
			"POST /dashboard/users", "PUT /dashboard/users/" + victim, "DELETE /dashboard/users/" + victim,
			"POST /dashboard/users/" + victim + "/unlock"} {
			method, path, _ := strings.Cut(route, " ")
			var body any
			switch path {
			case "/dashboard/password":
				body = map[string]string{"current_password": dashboardPassword, "new_password": "a forged new password"}
			case "/dashboard/users":
				body = map[string]any{"email": "forged@example.com", "role": "admin", "merchant_account_ids": []string{"default"}}
			case "/dashboard/users/" + victim:
				if method == http.MethodPut {
					body = map[string]any{"role": "admin"}
				}
			}
			resp, raw := forged.do(t, method, path, body, header...)
			if resp.StatusCode != http.StatusForbidden || errorMessage(raw) == "" {
				t.Errorf("%s: %s = %d %s; want 403", c.name, route, resp.StatusCode, raw)
			}
		}
	}
	// A sign-in from another origin is refused too (login CSRF).
	evil := &browser{s: s, origin: "https://evil.test"}
	if resp, body := evil.do(t, http.MethodPost, "/dashboard/sign-in",
		map[string]string{"email": "admin@example.com", "password": dashboardPassword}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin sign-in = %d %s", resp.StatusCode, body)
	}
	// The session survived every forged request, and none of them
	// changed anything.
	b.token(t)
	if resp, raw := b.do(t, http.MethodGet, "/dashboard/users", nil); resp.StatusCode != http.StatusOK ||
		strings.Contains(string(raw), "forged@example.com") || !strings.Contains(string(raw), `"role":"viewer"`) {
		t.Errorf("the team after forged requests = %d %s", resp.StatusCode, raw)
	}
	b.signIn(t, "admin@example.com") // the password is unchanged
}

func userID(t *testing.T, svc *dashboard.Service, email string) string {
	t.Helper()
	u, err := svc.Store.DashboardUserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
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

// errorDetails returns the pointers of an error's details.
func errorPointers(body []byte) []string {
	var e struct{ Details []struct{ Pointer string } }
	_ = json.Unmarshal(body, &e)
	var out []string
	for _, d := range e.Details {
		out = append(out, d.Pointer)
	}
	return out
}

func TestDashboardTeam(t *testing.T) {
	const origin = "https://dashboard.test"
	s, svc := startDashboard(t, origin)
	addDashboardUser(t, svc, "admin@example.com", coreapi.RoleAdmin, "default", "acme")
	addDashboardUser(t, svc, "dev@example.com", coreapi.RoleDeveloper, "default")
	addDashboardUser(t, svc, "other@example.com", coreapi.RoleViewer, "elsewhere")
	addDashboardUser(t, svc, "wide@example.com", coreapi.RoleViewer, "default", "elsewhere")
	admin := &browser{s: s, origin: origin}
	sess := admin.signIn(t, "admin@example.com")
	if _, ok := sess["idle_expires_at"].(string); !ok {
		t.Errorf("session = %v; want its idle_expires_at", sess)
	}
	adminID := sess["user"].(map[string]any)["id"].(string)

	// The list: the users sharing one of the admin's accounts, each with
	// only the accounts the admin holds too (never "elsewhere", another
	// merchant's) and whether the admin may manage them.
	resp, body := admin.do(t, http.MethodGet, "/dashboard/users", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "dev@example.com") ||
		!strings.Contains(string(body), "wide@example.com") || strings.Contains(string(body), "other@example.com") ||
		strings.Contains(string(body), "elsewhere") {
		t.Fatalf("team = %d %s", resp.StatusCode, body)
	}
	var list struct {
		Items []struct {
			Email              string
			MerchantAccountIDs []string `json:"merchant_account_ids"`
			Manageable         *bool
		}
	}
	_ = json.Unmarshal(body, &list)
	seen := map[string]string{}
	for _, u := range list.Items {
		if u.Manageable == nil {
			t.Fatalf("team = %s; want manageable on every user", body)
		}
		seen[u.Email] = fmt.Sprintf("%s %t", strings.Join(u.MerchantAccountIDs, ","), *u.Manageable)
	}
	if want := map[string]string{"admin@example.com": "default,acme true", "dev@example.com": "default true",
		"wide@example.com": "default false"}; !maps.Equal(seen, want) {
		t.Errorf("team = %v; want %v", seen, want)
	}

	// Adding a viewer answers its generated password, once.
	resp, body = admin.do(t, http.MethodPost, "/dashboard/users",
		map[string]any{"email": "New@Example.com", "role": "viewer", "merchant_account_ids": []string{"acme"}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("add = %d %s", resp.StatusCode, body)
	}
	var added struct{ ID, Email, Password string }
	_ = json.Unmarshal(body, &added)
	if added.Email != "new@example.com" || len(added.Password) < dashboard.MinPasswordLen {
		t.Fatalf("added = %s", body)
	}
	if resp, body := admin.do(t, http.MethodGet, "/dashboard/users", nil); strings.Contains(string(body), added.Password) {
		t.Errorf("the list holds the generated password: %d %s", resp.StatusCode, body)
	}
	viewer := &browser{s: s, origin: origin}
	if sess := viewer.signInWith(t, "new@example.com", added.Password); sess["user"].(map[string]any)["must_change_password"] != true {
		t.Errorf("the session of a generated password = %v; want must_change_password", sess)
	}
	mustChangePasswordFirst(t, viewer, added.Password, added.ID)

	// Only admins manage the team: 403 in the error shape.
	dev := &browser{s: s, origin: origin}
	dev.signIn(t, "dev@example.com")
	for _, c := range []struct {
		who          *browser
		method, path string
		body         any
	}{
		{viewer, http.MethodGet, "/dashboard/users", nil},
		{viewer, http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "viewer", "merchant_account_ids": []string{"acme"}}},
		{dev, http.MethodPut, "/dashboard/users/" + added.ID, map[string]any{"role": "admin"}},
		{dev, http.MethodDelete, "/dashboard/users/" + added.ID, nil},
		{dev, http.MethodPost, "/dashboard/users/" + added.ID + "/unlock", nil},
		{dev, http.MethodPost, "/dashboard/users/" + added.ID + "/password-reset", nil},
	} {
		resp, body := c.who.do(t, c.method, c.path, c.body)
		if resp.StatusCode != http.StatusForbidden || errorMessage(body) != dashboard.ErrNotAdmin.Error() {
			t.Errorf("%s %s by a non-admin = %d %s; want 403", c.method, c.path, resp.StatusCode, body)
		}
	}

	// Every bad input: its status, and the field or message it names.
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		want         string // a detail's pointer, or part of the message
	}{
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "not an email", "role": "owner", "merchant_account_ids": []string{}}, 400, "/email"},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "owner", "merchant_account_ids": []string{"acme"}}, 400, "/role"},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "viewer", "merchant_account_ids": []string{"Acme!"}}, 400, "/merchant_account_ids/0"},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "viewer"}, 400, "/merchant_account_ids"},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "viewer", "merchant_account_ids": []string{"acme"}, "password": "mine-mine-mine"}, 400, "/password"},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "viewer", "merchant_account_ids": []string{"elsewhere"}}, 403, `"elsewhere"`},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "x@example.com", "role": "admin", "merchant_account_ids": []string{"*"}}, 403, `"*"`},
		{http.MethodPost, "/dashboard/users", map[string]any{"email": "dev@example.com", "role": "viewer", "merchant_account_ids": []string{"acme"}}, 409, "already exists"},
		{http.MethodPut, "/dashboard/users/NOT-AN-ID", map[string]any{"role": "admin"}, 400, "user_id"},
		{http.MethodPut, "/dashboard/users/00000000-0000-4000-8000-000000000000", map[string]any{"role": "admin"}, 404, "dashboard user not found"},
		{http.MethodPut, "/dashboard/users/" + userID(t, svc, "other@example.com"), map[string]any{"role": "admin"}, 404, "dashboard user not found"},
		{http.MethodPut, "/dashboard/users/" + userID(t, svc, "wide@example.com"), map[string]any{"role": "admin"}, 403, "do not administer"},
		{http.MethodPut, "/dashboard/users/" + added.ID, map[string]any{"merchant_account_ids": []string{"acme", "elsewhere"}}, 403, `"elsewhere"`},
		{http.MethodPut, "/dashboard/users/" + added.ID, map[string]any{"role": 3}, 400, "/role"},
		{http.MethodPut, "/dashboard/users/" + added.ID, map[string]any{"role": nil}, 400, "/role"},
		{http.MethodPut, "/dashboard/users/" + added.ID, map[string]any{"merchant_account_ids": []string{}}, 400, "/merchant_account_ids"},
		{http.MethodPut, "/dashboard/users/" + adminID, map[string]any{"role": "viewer"}, 422, "last admin"},
		{http.MethodDelete, "/dashboard/users/" + adminID, nil, 422, "yourself"},
		{http.MethodPost, "/dashboard/users/" + adminID + "/password-reset", nil, 422, "Change password"},
		{http.MethodPost, "/dashboard/users/" + userID(t, svc, "wide@example.com") + "/password-reset", nil, 403, "do not administer"},
		{http.MethodPost, "/dashboard/users/" + userID(t, svc, "other@example.com") + "/password-reset", nil, 404, "dashboard user not found"},
		{http.MethodPost, "/dashboard/users/NOT-AN-ID/password-reset", nil, 400, "user_id"},
		{http.MethodPost, "/dashboard/password", map[string]any{"current_password": "wrong password!", "new_password": "a-new-long-password"}, 400, "/current_password"},
		{http.MethodPost, "/dashboard/password", map[string]any{"current_password": dashboardPassword, "new_password": "short"}, 400, "/new_password"},
	} {
		resp, body := admin.do(t, c.method, c.path, c.body)
		if resp.StatusCode != c.status || !slices.Contains(errorPointers(body), c.want) && !strings.Contains(errorMessage(body), c.want) {
			t.Errorf("%s %s %v = %d %s; want %d naming %s", c.method, c.path, c.body, resp.StatusCode, body, c.status, c.want)
		}
	}

	// A change, then the viewer's next token carries it.
	resp, body = admin.do(t, http.MethodPut, "/dashboard/users/"+added.ID, map[string]any{"role": "developer", "merchant_account_ids": []string{"default", "acme"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"role":"developer"`) {
		t.Fatalf("change = %d %s", resp.StatusCode, body)
	}
	if tok := viewer.token(t); !slices.Contains(tok["scopes"].([]any), any("payment-services.write")) ||
		len(tok["merchant_account_ids"].([]any)) != 2 {
		t.Errorf("the changed user's token = %v", tok)
	}

	// A locked user, unlocked by the admin.
	guesser := &browser{s: s, origin: origin}
	for range dashboard.DefaultMaxFailures {
		guesser.do(t, http.MethodPost, "/dashboard/sign-in", map[string]string{"email": "dev@example.com", "password": "not the password"})
	}
	_, body = admin.do(t, http.MethodGet, "/dashboard/users", nil)
	var team struct {
		Items []struct {
			ID, Email   string
			LockedUntil *string `json:"locked_until"`
		}
	}
	_ = json.Unmarshal(body, &team)
	devID := userID(t, svc, "dev@example.com")
	for _, u := range team.Items {
		if (u.LockedUntil != nil) != (u.ID == devID) {
			t.Errorf("%s locked_until = %v", u.Email, u.LockedUntil)
		}
	}
	if resp, body := admin.do(t, http.MethodPost, "/dashboard/users/"+devID+"/unlock", nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"locked_until":null`) {
		t.Errorf("unlock = %d %s", resp.StatusCode, body)
	}
	guesser.signIn(t, "dev@example.com")

	// A reset: locked out again, the developer gets a generated password
	// to change first, their lockout cleared and their sessions ended.
	locked := &browser{s: s, origin: origin}
	for range dashboard.DefaultMaxFailures {
		locked.do(t, http.MethodPost, "/dashboard/sign-in", map[string]string{"email": "dev@example.com", "password": "not the password"})
	}
	resp, body = admin.do(t, http.MethodPost, "/dashboard/users/"+devID+"/password-reset", nil)
	var reset struct {
		Password           string
		LockedUntil        *string `json:"locked_until"`
		MustChangePassword bool    `json:"must_change_password"`
	}
	_ = json.Unmarshal(body, &reset)
	if resp.StatusCode != http.StatusOK || len(reset.Password) < dashboard.MinPasswordLen || reset.LockedUntil != nil ||
		!reset.MustChangePassword || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("reset = %d %s", resp.StatusCode, body)
	}
	for _, b := range []*browser{guesser, dev} {
		if resp, body := b.do(t, http.MethodGet, "/dashboard/session", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the developer's session after a reset = %d %s; want 401", resp.StatusCode, body)
		}
	}
	if resp, body := locked.do(t, http.MethodPost, "/dashboard/sign-in", map[string]string{"email": "dev@example.com", "password": dashboardPassword}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("sign-in with the password before the reset = %d %s; want 401", resp.StatusCode, body)
	}
	locked.signInWith(t, "dev@example.com", reset.Password)
	mustChangePasswordFirst(t, locked, reset.Password, added.ID)

	// Removing a user ends their sessions.
	if resp, body := admin.do(t, http.MethodDelete, "/dashboard/users/"+added.ID, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("remove = %d %s", resp.StatusCode, body)
	}
	if resp, body := viewer.do(t, http.MethodGet, "/dashboard/session", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a removed user's session = %d %s", resp.StatusCode, body)
	}
}

// mustChangePasswordFirst holds b's session, signed in with the generated
// password, to the password change: every other route but the session's
// read and sign-out is 403 password_change_required, whoever the user is.
// It then changes the password, after which the session may do the rest.
// other is a user the routes name.
func mustChangePasswordFirst(t *testing.T, b *browser, generated, other string) {
	t.Helper()
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/dashboard/token"},
		{http.MethodGet, "/dashboard/users"},
		{http.MethodPost, "/dashboard/users"},
		{http.MethodPut, "/dashboard/users/" + other},
		{http.MethodDelete, "/dashboard/users/" + other},
		{http.MethodPost, "/dashboard/users/" + other + "/unlock"},
		{http.MethodPost, "/dashboard/users/" + other + "/password-reset"},
	} {
		// The body is bad as well: the refusal comes first.
		resp, body := b.do(t, c.method, c.path, map[string]any{"bad": true})
		if resp.StatusCode != http.StatusForbidden || errorCode(body) != httpapi.CodePasswordChangeRequired ||
			!strings.Contains(errorMessage(body), "change it") {
			t.Errorf("%s %s before the password change = %d %s; want 403 %s", c.method, c.path, resp.StatusCode, body, httpapi.CodePasswordChangeRequired)
		}
	}
	resp, body := b.do(t, http.MethodGet, "/dashboard/session", nil)
	var sess struct{ User struct{ Email string } }
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"must_change_password":true`) || json.Unmarshal(body, &sess) != nil {
		t.Errorf("the session's read before the password change = %d %s", resp.StatusCode, body)
	}
	email := sess.User.Email
	// Another session of the same user may sign out.
	other2 := &browser{s: b.s, origin: b.origin}
	other2.signInWith(t, email, generated)
	if resp, body := other2.do(t, http.MethodPost, "/dashboard/sign-out", nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("sign-out before the password change = %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do(t, http.MethodPost, "/dashboard/password",
		map[string]any{"current_password": generated, "new_password": "chosen-by-" + email}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("password change = %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do(t, http.MethodGet, "/dashboard/session", nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"must_change_password":false`) {
		t.Errorf("the session's read after the password change = %d %s", resp.StatusCode, body)
	}
	b.token(t)
}

// A password change ends the user's other sessions and keeps this one.
func TestDashboardPasswordChange(t *testing.T) {
	const origin = "https://dashboard.test"
	s, svc := startDashboard(t, origin)
	addDashboardUser(t, svc, "viewer@example.com", coreapi.RoleViewer, "default")
	here, there := &browser{s: s, origin: origin}, &browser{s: s, origin: origin}
	here.signIn(t, "viewer@example.com")
	there.signIn(t, "viewer@example.com")
	const next = "the-new-dashboard-password"
	if resp, body := here.do(t, http.MethodPost, "/dashboard/password",
		map[string]any{"current_password": dashboardPassword, "new_password": next}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("password change = %d %s", resp.StatusCode, body)
	}
	here.token(t)
	if resp, body := there.do(t, http.MethodPost, "/dashboard/token", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the other session's token after the change = %d %s; want 401", resp.StatusCode, body)
	}
	(&browser{s: s, origin: origin}).signInWith(t, "viewer@example.com", next)
}
