package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const plain = "s3cr3t-4111111111111111"

type exported struct {
	Name   string
	Key    String
	PAN    Bytes
	KeyPtr *String
}

type unexported struct {
	name string
	key  String
	pan  Bytes
}

// leaks reports whether out shows any part of the secret.
func leaks(out string) bool {
	return strings.Contains(out, "s3cr3t") || strings.Contains(out, "4111") ||
		strings.Contains(out, "7333637233") // hex of "s3cr3"
}

func values() map[string]any {
	s := New(plain)
	b := NewBytes([]byte(plain))
	return map[string]any{
		"String":             s,
		"*String":            &s,
		"Bytes":              b,
		"*Bytes":             &b,
		"struct exported":    exported{Name: "n", Key: s, PAN: b, KeyPtr: &s},
		"*struct exported":   &exported{Name: "n", Key: s, PAN: b, KeyPtr: &s},
		"struct unexported":  unexported{name: "n", key: s, pan: b},
		"*struct unexported": &unexported{name: "n", key: s, pan: b},
		"slice":              []String{s, s},
		"map":                map[string]Bytes{"pan": b},
	}
}

func TestNothingPrintsTheSecret(t *testing.T) {
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s", "%T %v"}
	for name, v := range values() {
		for _, verb := range verbs {
			t.Run(name+"/"+verb, func(t *testing.T) {
				out := fmt.Sprintf(verb, v)
				if leaks(out) {
					t.Errorf("fmt %s leaks: %s", verb, out)
				}
				// With the text verbs nothing may show a digit, except
				// unexported fields, which print as pointer addresses.
				textVerb := verb == "%v" || verb == "%+v" || verb == "%#v" || verb == "%s" || verb == "%q"
				if textVerb && !strings.Contains(name, "unexported") && strings.ContainsAny(out, "0123456789") {
					t.Errorf("fmt %s shows digits: %s", verb, out)
				}
			})
		}
		t.Run(name+"/Sprint", func(t *testing.T) {
			if out := fmt.Sprint(v) + fmt.Sprintln(v); leaks(out) {
				t.Errorf("Sprint leaks: %s", out)
			}
		})
		t.Run(name+"/error", func(t *testing.T) {
			if out := fmt.Errorf("wrapped: %v", v).Error(); leaks(out) {
				t.Errorf("error leaks: %s", out)
			}
		})
		t.Run(name+"/json", func(t *testing.T) {
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if leaks(string(out)) || strings.ContainsAny(string(out), "0123456789") {
				t.Errorf("json leaks: %s", out)
			}
		})
		// Without the time, whose digits may spell "4111" by chance.
		noTime := &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}
		for hname, mk := range map[string]func(*bytes.Buffer) slog.Handler{
			"slog json": func(w *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(w, noTime) },
			"slog text": func(w *bytes.Buffer) slog.Handler { return slog.NewTextHandler(w, noTime) },
		} {
			t.Run(name+"/"+hname, func(t *testing.T) {
				var buf bytes.Buffer
				slog.New(mk(&buf)).Info("m", "v", v, slog.Group("g", "v", v))
				if leaks(buf.String()) {
					t.Errorf("%s leaks: %s", hname, buf.String())
				}
			})
		}
	}
}

func TestExportedFormsShowRedacted(t *testing.T) {
	s := New(plain)
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"%v", fmt.Sprintf("%v", s), Redacted},
		{"%#v", fmt.Sprintf("%#v", s), Redacted},
		{"%q", fmt.Sprintf("%q", s), Redacted},
		{"json", mustJSON(t, exported{Key: s}), `{"Name":"","Key":"[REDACTED]","PAN":"[REDACTED]","KeyPtr":null}`},
		{"text", string(must(s.MarshalText())), Redacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %s, want %s", tt.got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	var zero String
	tests := []struct {
		name     string
		s        String
		reveal   string
		isZero   bool
		equalsAB bool
	}{
		{"zero value", zero, "", true, false},
		{"empty", New(""), "", true, false},
		{"value", New("ab"), "ab", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Reveal(); got != tt.reveal {
				t.Errorf("Reveal() = %q, want %q", got, tt.reveal)
			}
			if got := tt.s.IsZero(); got != tt.isZero {
				t.Errorf("IsZero() = %v", got)
			}
			if got := tt.s.Equal(New("ab")); got != tt.equalsAB {
				t.Errorf("Equal(ab) = %v", got)
			}
		})
	}
}

func TestStringUnmarshal(t *testing.T) {
	var cfg struct{ Key String }
	if err := json.Unmarshal([]byte(`{"Key":"k-123"}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Key.Reveal() != "k-123" {
		t.Errorf("got %q", cfg.Key.Reveal())
	}
}

func TestBytesZero(t *testing.T) {
	buf := []byte(plain)
	b := NewBytes(buf)
	alias := b
	if !bytes.Equal(b.Reveal(), []byte(plain)) || b.Len() != len(plain) {
		t.Fatal("Reveal does not return the value")
	}
	alias.Zero()
	if !bytes.Equal(buf, make([]byte, len(plain))) {
		t.Errorf("backing array not wiped: %q", buf)
	}
	if b.Reveal() != nil || b.Len() != 0 {
		t.Error("copy still reveals data after Zero")
	}
	b.Zero() // twice is fine
	var zero Bytes
	zero.Zero()
	if zero.Reveal() != nil {
		t.Error("zero value reveals data")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
