package e2e

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	coreapp "github.com/payorch/core-api/app"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/auth"
	vpapp "github.com/payorch/vault-proxy/app"
)

// webDir is the dashboard's npm package, whose browsertest/run.mjs drives
// Chromium.
const webDir = "../core-api/dashboard/web"

// TestDashboardInBrowser runs the dashboard in Debian's Chromium
// (playwright-core, never a downloaded browser) against the real stack:
// brute force locked out, capture from the detail page, the viewer's
// missing and refused write actions, a cross-origin post refused, a
// viewer added on the Team page who signs in with the password shown
// and changes it, axe-core on every page. Screenshots are kept under .data/dashboard-screenshots.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test is not short")
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("Chromium is needed (apt-get install chromium): %v", err)
	}
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("the dashboard's npm packages are needed (make dashboard-deps): %v", err)
	}

	keyDir := t.TempDir()
	if _, err := auth.LoadSigningKeyDir(keyDir); err != nil {
		t.Fatal(err)
	}
	pki := newFwdPKI(t)
	tg := newTarget(t, pki.ca, nil, nil) // the forwarding target, with a CA vault-proxy trusts
	var origin string
	s := stack.Start(t, stack.WithForwardLoopback(pki.caFile), func(v *vpapp.Config, c *coreapp.Config) {
		origin = "http://" + c.Addr // the page is served by core-api itself
		c.Dashboard = coreapp.DashboardConfig{KeyDir: keyDir, Issuer: dashboardIssuer, Origin: origin}
		c.Webhooks.AllowLoopback = true
		v.DashboardKeysFile, v.DashboardIssuer, v.DashboardOrigin = filepath.Join(keyDir, auth.PublicKeysFile), dashboardIssuer, origin
	})
	svc := coreapp.NewDashboardService(postgrestest.Open(t, s.DBs.CoreDSN))
	addDashboardUser(t, svc, "admin@example.com", coreapi.RoleAdmin, "*")
	addDashboardUser(t, svc, "viewer@example.com", coreapi.RoleViewer, "default")
	addDashboardUser(t, svc, "locked@example.com", coreapi.RoleAdmin, "default")

	// The data the pages show: a buyer with a card, an authorized payment.
	tok := s.Token(t, "*.write")
	code, raw := s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/buyers", tok, map[string]any{"display_name": "Ada Lovelace"})
	if code != http.StatusCreated {
		t.Fatalf("buyer: %d %s", code, raw)
	}
	for _, email := range []string{"a@example.com", "b@example.com"} {
		if code, raw := s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/three-ds-scenarios", tok,
			scenarioBody("Y", "", map[string]any{"email_address": email})); code != http.StatusCreated {
			t.Fatalf("scenario: %d %s", code, raw)
		}
	}
	// The receiver's answer, markup included: the page shows it as text.
	const hooksAnswer = `receiver 7f3a says <b>thanks</b> & bye`
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, hooksAnswer)
	}))
	t.Cleanup(hooks.Close)
	code, raw = s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/webhook-subscriptions", tok,
		map[string]any{"url": hooks.URL + "/hooks"})
	var hookSub struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal(raw, &hookSub) != nil {
		t.Fatalf("webhook subscription: %d %s", code, raw)
	}
	pm := vaultCardTB(t, s, tok, "4111111111111111")
	txID := authorized(t, s, tok, pm, 2500, "")
	awaitWebhookAttempt(t, s, s.Token(t, "webhook-subscriptions.read"), hookSub.ID)
	// Not the default: the payment above is not screened.
	code, raw = s.Do(t, http.DefaultClient, http.MethodPost, s.CoreURL+"/payment-services", tok, map[string]any{
		"connector": "mock-antifraud", "display_name": "Screening", "settings": map[string]any{"api_version": "v2.1"},
		"credentials": map[string]any{"api_key": "dashboard-test-key"}})
	var screening struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal(raw, &screening) != nil {
		t.Fatalf("anti-fraud payment service: %d %s", code, raw)
	}

	// Another origin (another port: same site, so the SameSite cookie is
	// sent) whose page posts a form to the dashboard's sign-out.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>evil</title><body>
<form id="f" method="post" action="%s/dashboard/sign-out"><input name="x" value="1"></form>
<script>document.getElementById("f").submit()</script></body></html>`, origin)
	}))
	t.Cleanup(evil.Close)

	const teamViewerPassword = "the-team-viewer-s-own-password"
	hmacSecret := make([]byte, 32)
	_, _ = rand.Read(hmacSecret)
	hmacKey := base64.StdEncoding.EncodeToString(hmacSecret)
	results := filepath.Join(t.TempDir(), "results.json")

	artifacts, err := filepath.Abs(filepath.Join("..", ".data", "dashboard-screenshots", time.Now().UTC().Format("20060102T150405Z")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "node", "browsertest/run.mjs")
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(), "DASHBOARD_URL="+origin, "PASSWORD="+dashboardPassword, "ARTIFACTS="+artifacts,
		"ADMIN_EMAIL=admin@example.com", "VIEWER_EMAIL=viewer@example.com", "LOCKED_EMAIL=locked@example.com",
		"TX_ID="+txID, "EVIL_URL="+evil.URL, "CHROMIUM="+chromium, "RESULTS="+results,
		"TEAM_VIEWER_EMAIL=team-viewer@example.com", "TEAM_VIEWER_NEW_PASSWORD="+teamViewerPassword,
		"TARGET_HOST="+tg.Host, "HOOKS_URL="+hooks.URL+"/hooks", "HOOKS_ANSWER="+hooksAnswer, "HMAC_KEY="+hmacKey, "VAULT_PROXY_SPKI="+spkiHash(t, s.PKI.PublicCert))
	servicesResults := filepath.Join(t.TempDir(), "services.json")
	cmd.Env = append(cmd.Env, "PM_ID="+pm, "SERVICES_RESULTS="+servicesResults, "SCENARIO_CARD="+dashboardScenarioCard)
	out, err := cmd.CombinedOutput()
	t.Logf("browser test (screenshots in %s):\n%s", artifacts, out)
	if err != nil {
		t.Fatalf("browser test: %v", err)
	}

	// The viewer the admin added through the page, who then set their own
	// password there.
	if u, err := svc.Store.DashboardUserByEmail(t.Context(), "team-viewer@example.com"); err != nil ||
		u.Role != coreapi.RoleViewer || strings.Join(u.MerchantAccountIDs, ",") != "default" {
		t.Errorf("the user added through the page = %+v, %v", u, err)
	}
	if _, err := svc.SignIn(t.Context(), "team-viewer@example.com", teamViewerPassword); err != nil {
		t.Errorf("sign-in with the password set through the page = %v", err)
	}

	// What the click did, seen through the API: captured once, with its event.
	core := newCore(s, tok, "")
	tx := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+txID, nil)
	if tx["status"] != "capture_succeeded" || tx["captured_amount"] != 2500.0 {
		t.Errorf("after the dashboard's capture: %v", tx)
	}
	// The forwarding config and the signature method made through the page:
	// a real forward with that method reaches the target signed with the
	// key typed into the page.
	var made struct{ ConfigID, AuthID string }
	if raw, err := os.ReadFile(results); err != nil || json.Unmarshal(raw, &made) != nil || made.AuthID == "" {
		t.Fatalf("the browser test's results: %s, %v", raw, err)
	}
	code, raw = s.Do(t, s.PublicClient, http.MethodGet, s.PublicURL+"/vault-forward/configs/"+made.ConfigID, tok, nil)
	var cfg struct{ Hosts []string }
	if code != http.StatusOK || json.Unmarshal(raw, &cfg) != nil || strings.Join(cfg.Hosts, " ") != tg.Host+" example.org:8443" {
		t.Errorf("the config after the page's edit of its hosts: %d %s", code, raw)
	}
	pmFwd := vaultCard(t, s, s.Token(t, "payment-methods.write"), "4111111111111111", "")["id"].(string)
	res := doForward(t, s, s.Token(t, "vault-forward.write"), `{"number":"{{ CARD_NUMBER_1 }}"}`,
		"x-vault-forward-url", tg.URL+"/charges", "x-vault-forward-payment-methods", pmFwd,
		"x-vault-forward-authentications", made.AuthID)
	if res.Status != http.StatusOK {
		t.Fatalf("forward with the page's method: %d %s", res.Status, res.Body)
	}
	params := verifyRFC9421(t, tg.last(t), "sig1", func(base, sig []byte) bool {
		m := hmac.New(sha256.New, hmacSecret)
		m.Write(base)
		return hmac.Equal(m.Sum(nil), sig)
	})
	if !strings.Contains(params, `keyid="hk1"`) {
		t.Errorf("signature params %q", params)
	}

	// The anti-fraud API version the page's toggle chose.
	ps := core.ok(t, http.StatusOK, http.MethodGet, "/payment-services/"+screening.ID, nil)
	if v := ps["settings"].(map[string]any)["api_version"]; v != "v10.2" {
		t.Errorf("api_version after the page's toggle = %v", v)
	}

	checkDashboardPaymentService(t, s, core, servicesResults)

	// The scenarios as the page left them: c added (a challenge that
	// fails), moved up a place, then b dragged to the top; the card
	// condition last.
	var order []string
	code, raw = core.do(t, http.MethodGet, "/three-ds-scenarios", nil)
	if code != http.StatusOK || strings.Contains(string(raw), dashboardScenarioCard) {
		t.Fatalf("scenarios: %d %s", code, raw)
	}
	var scenarios struct{ Items []map[string]any }
	if err := json.Unmarshal(raw, &scenarios); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios.Items {
		email, _ := sc["conditions"].(map[string]any)["email_address"].(string)
		if email == "" {
			continue
		}
		order = append(order, email)
		if sc["conditions"].(map[string]any)["email_address"] == "c@example.com" {
			o, _ := json.Marshal(sc["outcome"])
			if !strings.Contains(string(o), `"authentication":{"transaction_status":"C"}`) || !strings.Contains(string(o), `"result":{"transaction_status":"N"}`) {
				t.Errorf("the scenario added through the page: %s", o)
			}
		}
	}
	if strings.Join(order, " ") != "b@example.com a@example.com c@example.com" {
		t.Errorf("scenario order after the page's moves = %v", order)
	}
	// The card condition typed into the page, edited there without the
	// number: listed masked, with the outcome of the edit, and a 3-D
	// Secure payment with that card gets it while another card does not.
	if len(scenarios.Items) != 4 {
		t.Fatalf("%d scenarios, want 4", len(scenarios.Items))
	}
	cardScenario := scenarios.Items[3]
	cond, _ := cardScenario["conditions"].(map[string]any)["card_condition"].(map[string]any)
	if cond == nil || cond["bin"] != dashboardScenarioCard[:6] || cond["last4"] != dashboardScenarioCard[12:] ||
		cardScenario["outcome"].(map[string]any)["authentication"].(map[string]any)["transaction_status"] != "R" {
		t.Errorf("the card scenario made through the page: %v", cardScenario)
	}
	_, tx = pay(t, s, tok, threeDSPayment(vaultCardTB(t, s, tok, dashboardScenarioCard), 1001, 1001))
	checkThreeDS(t, tx, "authorization_declined", "R", "frictionless", "three_d_secure_rejected", "", 1001)
	_, tx = pay(t, s, tok, threeDSPayment(pm, 1001, 1001))
	checkThreeDS(t, tx, "authorization_succeeded", "Y", "frictionless", "", "05", 1001)
	events := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+txID+"/events", nil)
	b, _ := json.Marshal(events)
	if n := strings.Count(string(b), `"capture_succeeded"`); n == 0 {
		t.Errorf("no capture event: %s", b)
	}
}

// dashboardScenarioCard is the card of the 3-D Secure scenario the
// browser test types into the page.
const dashboardScenarioCard = "5555555555554444"

// The keys the browser test types into the payment service form: never
// in an answer.
var dashboardServiceKeys = []string{"mc_live_dashboardKEY1", "mc_test_dashboardKEY2"}

// checkDashboardPaymentService reads back, through the API, the mock-card
// payment service the browser test made and whose key it replaced, and
// the payments it made through it before and after: the first refused for
// the created key, the second authorized with the new one, with the
// settings typed into the page.
func checkDashboardPaymentService(t *testing.T, s *stack.Stack, core coreClient, results string) {
	t.Helper()
	var made struct{ ServiceID, RefusedTx, AcceptedTx string }
	if raw, err := os.ReadFile(results); err != nil || json.Unmarshal(raw, &made) != nil || made.AcceptedTx == "" {
		t.Fatalf("the browser test's payment service results: %s, %v", raw, err)
	}
	code, raw := core.do(t, http.MethodGet, "/payment-services/"+made.ServiceID, nil)
	var ps struct {
		Connector, Method string
		DisplayName       string `json:"display_name"`
		Settings          map[string]any
		CredentialsSet    []string `json:"credentials_set"`
		Default           bool
	}
	if code != http.StatusOK || json.Unmarshal(raw, &ps) != nil {
		t.Fatalf("the page's payment service: %d %s", code, raw)
	}
	if ps.Connector != "mock-card" || ps.Method != "card" || ps.DisplayName != "Dashboard card EU" || ps.Settings["merchant_descriptor"] != "DASH SHOP" ||
		strings.Join(ps.CredentialsSet, ",") != "api_key" || ps.Default {
		t.Errorf("the page's payment service: %s", raw)
	}
	_, list := core.do(t, http.MethodGet, "/payment-services", nil)
	for _, key := range dashboardServiceKeys {
		if strings.Contains(string(raw)+string(list), key) {
			t.Errorf("a key typed into the page is in an answer")
		}
	}
	refused := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+made.RefusedTx, nil)
	accepted := core.ok(t, http.StatusOK, http.MethodGet, "/transactions/"+made.AcceptedTx, nil)
	for _, tx := range []map[string]any{refused, accepted} {
		if svc, _ := tx["payment_service"].(map[string]any); svc == nil || svc["id"] != made.ServiceID {
			t.Errorf("transaction %v went through %v", tx["id"], tx["payment_service"])
		}
	}
	if refused["status"] != "authorization_failed" || refused["error_code"] != "invalid_credentials" {
		t.Errorf("with the created key: %v %v", refused["status"], refused["error_code"])
	}
	if accepted["status"] != "authorization_succeeded" {
		t.Fatalf("with the replaced key: %v %v", accepted["status"], accepted["error_code"])
	}
	if rec := processorRecord(t, s, accepted["payment_service_transaction_id"].(string)); rec.MerchantDescriptor == nil || *rec.MerchantDescriptor != "DASH SHOP" {
		t.Errorf("mock-card got merchant_descriptor %v", rec.MerchantDescriptor)
	}
}

// awaitWebhookAttempt waits until a delivery of the subscription has an
// attempt recorded, for the page to show it.
func awaitWebhookAttempt(t *testing.T, s *stack.Stack, tok, subID string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		code, raw := s.Do(t, http.DefaultClient, http.MethodGet, s.CoreURL+"/webhook-subscriptions/"+subID+"/deliveries", tok, nil)
		if code == http.StatusOK && strings.Contains(string(raw), `"response":{`) {
			return
		}
	}
	t.Fatal("no webhook attempt recorded within 15s")
}

// spkiHash is the base64 SHA-256 of a PEM certificate's public key, for
// Chromium's --ignore-certificate-errors-spki-list: the browser trusts
// vault-proxy's development certificate and nothing else it would refuse.
func spkiHash(t *testing.T, certFile string) string {
	t.Helper()
	raw, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		t.Fatalf("no PEM in %s", certFile)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}
