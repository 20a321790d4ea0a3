package requestid

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	for range 20000 {
		id := Generate()
		if !uuidV4.MatchString(id) {
			t.Fatalf("Generate() = %q, not a v4 UUID", id)
		}
		if !Valid(id) {
			t.Fatalf("Generate() = %q is not Valid", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"uuid", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"word chars", "abc.DEF_123-x", true},
		{"one char", "a", true},
		{"max length", strings.Repeat("a", MaxLen), true},
		{"short number", "1234567890123456", true}, // fails Luhn
		{"empty", "", false},
		{"too long", strings.Repeat("a", MaxLen+1), false},
		{"space", "a b", false},
		{"newline injection", "a\r\nSet-Cookie: x", false},
		{"quote", `a"b`, false},
		{"non-ascii", "ä", false},
		{"card number", "4111111111111111", false},
		{"dashed card number", "req-4111-1111-1111-1111", false},
		// Exceptions panscan makes for free text do not apply to ids.
		{"card number between hex letters", "a4111111111111111a", false},
		{"underscored card number", "4111_1111_1111_1111", false},
		{"dotted card number", "4111.1111.1111.1111", false},
		{"card number shaped as a UUID", "41111111-1111-1111-1111-000000000000", false},
		{"12-digit card number", "r600000000007", false},
		{"trace id", "4bf92f3577b34da6a3ce929d0e0e4736", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Valid(tt.id); got != tt.want {
				t.Errorf("Valid(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	if got := Resolve("keep-me"); got != "keep-me" {
		t.Errorf("Resolve kept %q", got)
	}
	if got := Resolve("bad id"); !uuidV4.MatchString(got) {
		t.Errorf("Resolve(invalid) = %q, want a new id", got)
	}
}

func TestContext(t *testing.T) {
	if got := FromContext(context.Background()); got != "" {
		t.Errorf("empty context gave %q", got)
	}
	if got := FromContext(WithID(context.Background(), "x")); got != "x" {
		t.Errorf("got %q", got)
	}
}

func TestMiddleware(t *testing.T) {
	tests := []struct {
		name     string
		incoming []string
		keep     bool
	}{
		{"absent", nil, false},
		{"valid", []string{"client-id.1"}, true},
		{"invalid", []string{"bad id"}, false},
		{"card number", []string{"4242424242424242"}, false},
		{"duplicated", []string{"first", "second"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, v := range tt.incoming {
				req.Header.Add(Header, v)
			}
			before := req.Header.Clone()
			var ctxID string
			var fwd []string
			h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctxID = FromContext(r.Context())
				fwd = r.Header.Values(Header)
				w.WriteHeader(http.StatusNoContent)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			echoed := rec.Header().Get(Header)
			if echoed == "" || echoed != ctxID {
				t.Fatalf("echoed %q, context %q", echoed, ctxID)
			}
			if tt.keep && echoed != tt.incoming[0] {
				t.Errorf("got %q, want incoming %q kept", echoed, tt.incoming[0])
			}
			if !tt.keep && !uuidV4.MatchString(echoed) {
				t.Errorf("got %q, want a generated id", echoed)
			}
			if len(fwd) != 1 || fwd[0] != echoed {
				t.Errorf("request header seen by next = %q, want [%q]", fwd, echoed)
			}
			if strings.Join(req.Header.Values(Header), ",") != strings.Join(before.Values(Header), ",") {
				t.Error("middleware modified the caller's request headers")
			}
		})
	}
}

func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		_ = Generate()
	}
}
