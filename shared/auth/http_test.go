package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

func TestContext(t *testing.T) {
	ctx := context.Background()
	if p, ok := auth.FromContext(ctx); ok || p != nil {
		t.Error("principal in an empty context")
	}
	want := &auth.Principal{KeyID: kidA, Scopes: []string{"buyers.read"}}
	got, ok := auth.FromContext(auth.WithPrincipal(ctx, want))
	if !ok || got != want {
		t.Errorf("FromContext = %v, %v", got, ok)
	}
	if _, ok := auth.FromContext(auth.WithPrincipal(ctx, nil)); ok {
		t.Error("nil principal reported present")
	}
}

func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer a.b.c", "bearer  x", "Basic x", "Bearer", "Bearer ", "", "Bearer a b", "BEARER\tx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, ok := auth.ParseAuthorization(s)
		if !ok {
			if tok != "" {
				t.Fatalf("token %q with !ok", tok)
			}
			return
		}
		if tok == "" || !strings.HasSuffix(s, tok) || !strings.EqualFold(s[:7], "bearer ") {
			t.Fatalf("ParseAuthorization(%q) = %q", s, tok)
		}
		if strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
			t.Fatalf("token %q holds other characters", tok)
		}
	})
}

// FuzzVerify: no input panics, every error is a 401, and whatever is
// accepted is the seed token itself (nothing else is signed by keyA).
func FuzzVerify(f *testing.F) {
	tok, err := auth.Mint(keyA, testIssuer, []string{"buyers.write"}, time.Hour, t0, []string{"acc-1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Bearer " + tok)
	f.Add("Bearer " + tok[:len(tok)-2])
	f.Add("Bearer eyJhbGciOiJub25lIn0.e30.")
	f.Add("Bearer a.b.c")
	v := newVerifier(f, auth.Config{CacheSize: 16})
	f.Fuzz(func(t *testing.T, header string) {
		p, err := v.Verify(context.Background(), header, t0)
		if err != nil {
			wantAPIError(t, err, 401, "")
			return
		}
		if got, _ := auth.ParseAuthorization(header); got != tok || p.KeyID != kidA {
			t.Fatalf("accepted %q as %+v", header, p)
		}
	})
}
