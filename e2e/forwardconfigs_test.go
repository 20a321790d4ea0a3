package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/payorch/e2e/stack"
	"github.com/payorch/shared/apierror"
)

type configOut struct {
	Type, ID          string
	DisplayName       string `json:"display_name"`
	MerchantAccountID string `json:"merchant_account_id"`
	Hosts             []string
}

type authOut struct {
	Type, ID, Kind string
	DisplayName    string `json:"display_name"`
	Fields         []map[string]any
}

func TestForwardConfigsCRUD(t *testing.T) {
	s := stack.Start(t)
	w := s.Token(t, "vault-forward-configs.write")
	r := s.Token(t, "vault-forward-configs.read")
	base := s.PublicURL + "/vault-forward/configs"
	do := func(t *testing.T, method, url, tok string, body any, hdr ...string) (int, []byte) {
		t.Helper()
		return s.Do(t, s.PublicClient, method, url, tok, body, hdr...)
	}

	code, raw := do(t, "POST", base, w, map[string]any{"display_name": "Processor A", "hosts": []string{"API.Processor.example", "127.0.0.1:9999", "api.processor.example"}})
	if code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	var c configOut
	if err := json.Unmarshal(raw, &c); err != nil || c.Type != "vault-forward-config" || c.MerchantAccountID != "default" ||
		strings.Join(c.Hosts, ",") != "api.processor.example,127.0.0.1:9999" {
		t.Fatalf("config: %s", raw)
	}

	t.Run("bad input points at the field", func(t *testing.T) {
		cases := []struct {
			name    string
			body    string
			pointer string
		}{
			{"missing display_name", `{"hosts":["a.example"]}`, "/display_name"},
			{"missing hosts", `{"display_name":"x"}`, "/hosts"},
			{"empty hosts", `{"display_name":"x","hosts":[]}`, "/hosts"},
			{"scheme", `{"display_name":"x","hosts":["https://a.example"]}`, "/hosts/0"},
			{"path", `{"display_name":"x","hosts":["a.example","a.example/pay"]}`, "/hosts/1"},
			{"userinfo", `{"display_name":"x","hosts":["u@a.example"]}`, "/hosts/0"},
			{"bad port", `{"display_name":"x","hosts":["a.example:99999"]}`, "/hosts/0"},
			{"not a string", `{"display_name":"x","hosts":[42]}`, "/hosts/0"},
			{"unknown field", `{"display_name":"x","hosts":["a.example"],"url":"https://a.example"}`, "/url"},
			{"display_name too long", `{"display_name":"` + strings.Repeat("x", 201) + `","hosts":["a.example"]}`, "/display_name"},
			{"wrong type", `{"display_name":7,"hosts":["a.example"]}`, "/display_name"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := do(t, "POST", base, w, tc.body)
				if code != 400 {
					t.Fatalf("status %d: %s", code, raw)
				}
				e, err := apierror.Parse(raw)
				if err != nil {
					t.Fatalf("not the envelope: %s", raw)
				}
				var ptrs []string
				for _, d := range e.Details {
					ptrs = append(ptrs, d.Pointer)
				}
				if !strings.Contains(" "+strings.Join(ptrs, " ")+" ", " "+tc.pointer+" ") {
					t.Fatalf("details %v do not point at %s", ptrs, tc.pointer)
				}
			})
		}
	})

	t.Run("scopes", func(t *testing.T) {
		if code, _ := do(t, "POST", base, r, map[string]any{"display_name": "x", "hosts": []string{"a.example"}}); code != 403 {
			t.Fatalf("read token created a config: %d", code)
		}
		// A write scope includes reading (shared/auth); another resource's does not.
		if code, _ := do(t, "GET", base, w, nil); code != 200 {
			t.Fatalf("write token could not list configs: %d", code)
		}
		if code, _ := do(t, "GET", base, s.Token(t, "vault-forward.write"), nil); code != 403 {
			t.Fatalf("forward token listed configs: %d", code)
		}
	})

	t.Run("read, list and paginate", func(t *testing.T) {
		for _, n := range []string{"B", "C"} {
			if code, raw := do(t, "POST", base, w, map[string]any{"display_name": n, "hosts": []string{strings.ToLower(n) + ".example"}}); code != 201 {
				t.Fatalf("create %s: %d %s", n, code, raw)
			}
		}
		code, raw := do(t, "GET", base+"/"+c.ID, r, nil)
		if code != 200 || !strings.Contains(string(raw), `"display_name":"Processor A"`) {
			t.Fatalf("get: %d %s", code, raw)
		}
		var names []string
		cursor := ""
		for range 5 {
			url := base + "?limit=2"
			if cursor != "" {
				url += "&cursor=" + cursor
			}
			code, raw := do(t, "GET", url, r, nil)
			if code != 200 {
				t.Fatalf("list: %d %s", code, raw)
			}
			var page struct {
				Items      []configOut
				NextCursor *string `json:"next_cursor"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				names = append(names, it.DisplayName)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if strings.Join(names, ",") != "Processor A,B,C" {
			t.Fatalf("walked %v", names)
		}
		for _, q := range []string{"?limit=0", "?limit=101", "?cursor=zzz"} {
			if code, raw := do(t, "GET", base+q, r, nil); code != 400 {
				t.Fatalf("%s: %d %s", q, code, raw)
			}
		}
	})

	t.Run("partial update", func(t *testing.T) {
		code, raw := do(t, "PUT", base+"/"+c.ID, w, map[string]any{"display_name": "Processor A2"})
		if code != 200 || !strings.Contains(string(raw), `"hosts":["api.processor.example","127.0.0.1:9999"]`) || !strings.Contains(string(raw), "Processor A2") {
			t.Fatalf("update name: %d %s", code, raw)
		}
		code, raw = do(t, "PUT", base+"/"+c.ID, w, map[string]any{"hosts": []string{"api2.processor.example:8443"}})
		if code != 200 || !strings.Contains(string(raw), `"hosts":["api2.processor.example:8443"]`) || !strings.Contains(string(raw), "Processor A2") {
			t.Fatalf("update hosts: %d %s", code, raw)
		}
		if code, raw := do(t, "PUT", base+"/"+c.ID, w, `{"hosts":null}`); code != 400 {
			t.Fatalf("null hosts: %d %s", code, raw)
		}
	})

	t.Run("another merchant's config is not found", func(t *testing.T) {
		other := []string{"x-service-merchant-account-id", "other"}
		for _, tc := range []struct{ method, url string }{
			{"GET", base + "/" + c.ID}, {"PUT", base + "/" + c.ID}, {"DELETE", base + "/" + c.ID},
			{"GET", base + "/" + c.ID + "/authentications"}, {"POST", base + "/" + c.ID + "/authentications"},
		} {
			tok := w
			if tc.method == "GET" {
				tok = r
			}
			var body any
			if tc.method == "PUT" {
				body = map[string]any{"display_name": "stolen"}
			}
			if tc.method == "POST" {
				body = map[string]any{"kind": "mle", "display_name": "x", "fields": []map[string]string{{"key": "public_key", "value": "k"}}}
			}
			code, raw := do(t, tc.method, tc.url, tok, body, other...)
			if code != 404 {
				t.Fatalf("%s %s as another merchant: %d %s", tc.method, tc.url, code, raw)
			}
		}
		code, raw := do(t, "GET", base, r, nil, other...)
		if code != 200 || strings.Contains(string(raw), c.ID) {
			t.Fatalf("other merchant's list: %d %s", code, raw)
		}
		// An id that cannot be one is 400 at its path parameter, as on
		// every route (docs/api-conventions.md); one in upper case too.
		for _, tc := range []struct{ method, url, pointer string }{
			{"GET", base + "/not-a-uuid", "id"},
			{"PUT", base + "/" + strings.ToUpper(c.ID), "id"},
			{"DELETE", base + "/" + c.ID + "x", "id"},
			{"GET", base + "/" + c.ID + "/authentications/not-a-uuid", "auth_id"},
			{"DELETE", base + "/" + c.ID + "/authentications/" + strings.ToUpper(uuid.NewString()), "auth_id"},
		} {
			tok, body := w, any(nil)
			switch tc.method {
			case "GET":
				tok = r
			case "PUT":
				body = map[string]any{}
			}
			code, raw := do(t, tc.method, tc.url, tok, body)
			e := apiError(t, raw)
			if code != 400 || len(e.Details) != 1 || e.Details[0].Location != "path" || e.Details[0].Pointer != tc.pointer || e.Details[0].Type != "type_error.uuid" {
				t.Fatalf("%s %s: %d %s", tc.method, tc.url, code, raw)
			}
		}
	})
}

// Two partial updates of one config crossing each other keep both
// changes: renaming a config cannot put back hosts that a concurrent
// update removed (docs/api-conventions.md: omitted fields stay as they are).
func TestForwardConfigPartialUpdatesKeepEachOthersChanges(t *testing.T) {
	s := stack.Start(t)
	w := s.Token(t, "vault-forward-configs.write", "vault-forward-configs.read")
	base := s.PublicURL + "/vault-forward/configs/"
	for i := range 30 {
		cfg := createForwardConfig(t, s, w, "old.processor.example")
		var wg sync.WaitGroup
		codes := make([]int, 2)
		for j, body := range []map[string]any{{"hosts": []string{"new.processor.example"}}, {"display_name": "renamed"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[j], _ = s.Do(t, s.PublicClient, http.MethodPut, base+cfg, w, body)
			}()
		}
		wg.Wait()
		_, raw := s.Do(t, s.PublicClient, http.MethodGet, base+cfg, w, nil)
		var c configOut
		if err := json.Unmarshal(raw, &c); err != nil || codes[0] != 200 || codes[1] != 200 ||
			strings.Join(c.Hosts, ",") != "new.processor.example" || c.DisplayName != "renamed" {
			t.Fatalf("round %d: updates answered %v, then the config is %s; want both changes", i, codes, raw)
		}
	}
}

func TestForwardAuthenticationMethodsKeepSecretsSealed(t *testing.T) {
	s := stack.Start(t)
	w := s.Token(t, "vault-forward-configs.write")
	r := s.Token(t, "vault-forward-configs.read")
	cfg := createForwardConfig(t, s, w, "api.processor.example")
	authURL := s.PublicURL + "/vault-forward/configs/" + cfg + "/authentications"

	// Distinctive secrets, stored exactly as entered (trailing space and
	// new line kept), which must never leave the vault in clear.
	hmacSecret := "c2VjcmV0LWRpc3RpbmN0aXZlLWZvcndhcmQtdGVzdC12YWx1ZQ== \n"
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	privBody := strings.Split(privPEM, "\n")[1] // a line of the key's base64
	certPEM := "-----BEGIN CERTIFICATE-----\nMIIBnotreallyacert\n-----END CERTIFICATE-----\n"

	code, raw := s.Do(t, s.PublicClient, "POST", authURL, w, map[string]any{"kind": "signature", "display_name": "HMAC",
		"fields": []map[string]string{{"key": "algorithm", "value": "hmac-sha256"}, {"key": "key_id", "value": "k-1"}, {"key": "key", "value": hmacSecret}}})
	if code != 201 {
		t.Fatalf("add signature: %d %s", code, raw)
	}
	var sig authOut
	if err := json.Unmarshal(raw, &sig); err != nil || sig.Type != "vault-forward-authentication" || sig.Kind != "signature" {
		t.Fatalf("method: %s", raw)
	}
	wantFields := `[{"key":"algorithm","value":"hmac-sha256"},{"key":"key_id","value":"k-1"},{"key":"key"}]`
	if got, _ := json.Marshal(sig.Fields); string(got) != wantFields {
		t.Fatalf("fields %s, want %s", got, wantFields)
	}

	code, raw = s.Do(t, s.PublicClient, "POST", authURL, w, map[string]any{"kind": "mtls", "display_name": "client cert",
		"fields": []map[string]string{{"key": "certificate", "value": certPEM}, {"key": "private_key", "value": privPEM}, {"key": "ca_certificate", "value": certPEM}}})
	if code != 201 {
		t.Fatalf("add mtls: %d %s", code, raw)
	}
	var mtls authOut
	_ = json.Unmarshal(raw, &mtls)
	for _, f := range mtls.Fields {
		_, has := f["value"]
		if (f["key"] == "private_key") == has {
			t.Fatalf("mtls field %v: only private_key is secret", f)
		}
	}

	// Stored exactly as entered: the sealed value opens byte-identical.
	opened, err := s.VaultProxy.ForwardConfigs.Open(context.Background(), "default", []uuid.UUID{uuid.MustParse(sig.ID), uuid.MustParse(mtls.ID)})
	if err != nil || opened[0].Fields["key"] != hmacSecret || opened[1].Fields["private_key"] != privPEM || opened[1].Fields["certificate"] != certPEM {
		t.Fatalf("credentials did not open as entered: %v", err)
	}
	if _, err := s.VaultProxy.ForwardConfigs.Open(context.Background(), "other", []uuid.UUID{uuid.MustParse(sig.ID)}); err == nil {
		t.Fatal("another merchant opened the method")
	}

	t.Run("bad input", func(t *testing.T) {
		cases := []struct {
			name, body, pointer string
		}{
			{"unknown kind", `{"kind":"oauth","display_name":"x","fields":[{"key":"k","value":"v"}]}`, "/kind"},
			{"unknown key", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"k"},{"key":"private_key","value":"p"}]}`, "/fields/1/key"},
			{"missing required key", `{"kind":"signature","display_name":"x","fields":[{"key":"algorithm","value":"ed25519"}]}`, "/fields"},
			{"duplicate key", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"a"},{"key":"public_key","value":"b"}]}`, "/fields/1/key"},
			{"value not a string", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":1}]}`, "/fields/0/value"},
			{"extra member", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"a","secret":true}]}`, "/fields/0/secret"},
			{"missing display_name", `{"kind":"mle","fields":[{"key":"public_key","value":"a"}]}`, "/display_name"},
			{"unknown field", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"a"}],"config_id":"x"}`, "/config_id"},
			// Which of two was meant is not for the vault to guess.
			{"key twice in one field", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"k"},{"key":"algorithm","key":"key_id"}]}`, "/fields/1/key"},
			{"value twice in one field", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"k","value":"l"}]}`, "/fields/0/value"},
			// A credential is kept exactly as entered: half a surrogate
			// pair cannot be, so the body is refused, not changed.
			{"half a surrogate pair in a credential", `{"kind":"mle","display_name":"x","fields":[{"key":"public_key","value":"k"},{"key":"key_id","value":"a\ud800b"}]}`, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := s.Do(t, s.PublicClient, "POST", authURL, w, tc.body)
				e, err := apierror.Parse(raw)
				if code != 400 || err != nil {
					t.Fatalf("status %d: %s", code, raw)
				}
				found := false
				for _, d := range e.Details {
					found = found || d.Pointer == tc.pointer
				}
				if !found {
					t.Fatalf("no detail at %s: %s", tc.pointer, raw)
				}
			})
		}
	})

	t.Run("a private key in a field returned in clear is refused, nothing stored", func(t *testing.T) {
		list := func(t *testing.T) string {
			t.Helper()
			code, raw := s.Do(t, s.PublicClient, "GET", authURL, r, nil)
			if code != 200 {
				t.Fatalf("list: %d %s", code, raw)
			}
			return string(raw)
		}
		rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		// jwkOf is key as a JWK, or only its public half.
		jwkOf := func(key any, public bool) string {
			k, err := jwk.Import(key)
			if err == nil && public {
				k, err = jwk.PublicKeyOf(k)
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(k)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		sec1, _ := x509.MarshalECPrivateKey(ecKey)
		pubDER, _ := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
		pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
		pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}))
		ecJSON, rsaJSON, ecPublicJSON := jwkOf(ecKey, false), jwkOf(rsaKey, false), jwkOf(ecKey, true)
		// What each private value has that its public half has not.
		privateMember := func(jwkJSON string) string {
			var m map[string]any
			if err := json.Unmarshal([]byte(jwkJSON), &m); err != nil || m["d"] == nil {
				t.Fatalf("not a private JWK: %v", err)
			}
			return m["d"].(string)
		}
		ecD, rsaD := privateMember(ecJSON), privateMember(rsaJSON)
		octK := "b2N0LXNlY3JldC1kaXN0aW5jdGl2ZQ"
		sec1PEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
		cases := []struct {
			name, kind string
			fields     []string // key/value pairs
			bad        int      // the field refused
			secret     string   // must appear in no response
		}{
			{"mle public_key: PKCS#8 PEM", "mle", []string{"public_key", privPEM}, 0, privBody},
			{"mle public_key: SEC1 PEM", "mle", []string{"key_id", "k1", "public_key", sec1PEM}, 1, strings.Split(sec1PEM, "\n")[1]},
			{"mle public_key: PKCS#1 PEM", "mle", []string{"public_key", pkcs1}, 0, strings.Split(pkcs1, "\n")[3]},
			{"mle public_key: public PEM then a private one", "mle", []string{"public_key", pubPEM + privPEM}, 0, privBody},
			{"mle public_key: EC JWK with d", "mle", []string{"public_key", ecJSON}, 0, ecD},
			{"mle public_key: RSA JWK with d, p, q, dp, dq, qi", "mle", []string{"public_key", rsaJSON}, 0, rsaD},
			{"mle public_key: RSA JWK with only p", "mle", []string{"public_key", `{"kty":"RSA","n":"AQAB","e":"AQAB","p":"` + octK + `"}`}, 0, octK},
			{"mle public_key: oct JWK", "mle", []string{"public_key", `{"kty":"oct","k":"` + octK + `"}`}, 0, octK},
			{"mle public_key: JWK Set holding a private key", "mle", []string{"public_key", `{"keys":[` + ecPublicJSON + `,` + ecJSON + `]}`}, 0, ecD},
			{"mtls certificate bundled with its key", "mtls", []string{"certificate", certPEM + privPEM, "private_key", privPEM}, 0, privBody},
			{"mtls ca_certificate with a key", "mtls", []string{"certificate", certPEM, "private_key", privPEM, "ca_certificate", pkcs1}, 2, strings.Split(pkcs1, "\n")[3]},
		}
		before := list(t)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var fields []map[string]string
				for i := 0; i+1 < len(tc.fields); i += 2 {
					fields = append(fields, map[string]string{"key": tc.fields[i], "value": tc.fields[i+1]})
				}
				code, raw := s.Do(t, s.PublicClient, "POST", authURL, w, map[string]any{"kind": tc.kind, "display_name": "pasted", "fields": fields})
				if tc.secret != "" && strings.Contains(string(raw), tc.secret) {
					t.Errorf("the response carries the private key in clear")
				}
				e, err := apierror.Parse(raw)
				if code != 400 || err != nil || len(e.Details) != 1 {
					t.Fatalf("status %d: %s", code, raw)
				}
				if d := e.Details[0]; d.Pointer != "/fields/"+strconv.Itoa(tc.bad)+"/value" || d.Type != "value_error.private_key" ||
					!strings.Contains(d.Message, tc.fields[2*tc.bad]) {
					t.Fatalf("detail %+v, want /fields/%d/value naming %s", d, tc.bad, tc.fields[2*tc.bad])
				}
			})
		}
		if after := list(t); after != before {
			t.Fatalf("a refused method was stored:\nbefore %s\nafter  %s", before, after)
		}
		// The public halves are what these fields are for: kept and echoed.
		for _, pub := range []string{pubPEM, ecPublicJSON, `{"keys":[` + ecPublicJSON + `]}`} {
			code, raw := s.Do(t, s.PublicClient, "POST", authURL, w, map[string]any{"kind": "mle", "display_name": "public",
				"fields": []map[string]string{{"key": "public_key", "value": pub}}})
			var m authOut
			if code != 201 || json.Unmarshal(raw, &m) != nil || len(m.Fields) != 1 || m.Fields[0]["value"] != pub {
				t.Fatalf("public key %q: %d %s", pub, code, raw)
			}
			if code, raw := s.Do(t, s.PublicClient, "DELETE", authURL+"/"+m.ID, w, nil); code != 204 {
				t.Fatalf("delete: %d %s", code, raw)
			}
		}
	})

	// Reads never carry a secret value.
	code, raw = s.Do(t, s.PublicClient, "GET", authURL, r, nil)
	if code != 200 || !strings.Contains(string(raw), sig.ID) || !strings.Contains(string(raw), mtls.ID) {
		t.Fatalf("list: %d %s", code, raw)
	}
	code, one := s.Do(t, s.PublicClient, "GET", authURL+"/"+sig.ID, r, nil)
	if code != 200 {
		t.Fatalf("get: %d %s", code, one)
	}
	for what, text := range map[string]string{"list": string(raw), "get": string(one), "logs": s.Logs.String()} {
		if strings.Contains(text, "c2VjcmV0LWRpc3RpbmN0aXZl") || strings.Contains(text, privBody) {
			t.Fatalf("a secret value is in the %s", what)
		}
	}

	// The vault database holds them only sealed.
	dump := s.Dump(t, "vault")
	if !strings.Contains(dump, "forward_auth_methods") || !strings.Contains(dump, "api.processor.example") {
		t.Fatal("the dump holds no forwarding data; the test proves nothing")
	}
	if strings.Contains(dump, "c2VjcmV0LWRpc3RpbmN0aXZl") || strings.Contains(dump, privBody) {
		t.Fatal("a secret value is in clear in the vault database")
	}

	// Delete one method, then the config with the other.
	if code, raw := s.Do(t, s.PublicClient, "DELETE", authURL+"/"+sig.ID, w, nil); code != 204 {
		t.Fatalf("delete method: %d %s", code, raw)
	}
	if code, _ := s.Do(t, s.PublicClient, "DELETE", authURL+"/"+sig.ID, w, nil); code != 404 {
		t.Fatalf("delete again: %d", code)
	}
	if code, _ := s.Do(t, s.PublicClient, "DELETE", s.PublicURL+"/vault-forward/configs/"+cfg, w, nil); code != 204 {
		t.Fatalf("delete config: %d", code)
	}
	if code, _ := s.Do(t, s.PublicClient, "GET", s.PublicURL+"/vault-forward/configs/"+cfg, r, nil); code != 404 {
		t.Fatalf("deleted config: %d", code)
	}
	if n := countRows(t, s.DBs.VaultDSN, "forward_auth_methods"); n != 0 {
		t.Fatalf("%d methods left after their config was deleted", n)
	}
}
