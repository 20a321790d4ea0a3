package config

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"
)

func TestGetters(t *testing.T) {
	env := map[string]string{
		"S": "hello", "I": "42", "D": "1m30s", "B": "true", "B0": "0", "O": "sandbox",
		"U": "postgres://app:pw@db:5432/core?sslmode=disable", "E": "production",
	}
	l := NewLoader(MapLookup(env))
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"string", l.String("S"), "hello"},
		{"string default", l.String("S_MISSING", Default("dflt")), "dflt"},
		{"string optional", l.String("S_OPT", Optional()), ""},
		{"int", l.Int("I", 1, 100), 42},
		{"int default", l.Int("I_MISSING", 1, 100, Default("7")), 7},
		{"duration", l.Duration("D", time.Second, time.Hour), 90 * time.Second},
		{"bool", l.Bool("B"), true},
		{"bool 0", l.Bool("B0"), false},
		{"bool default", l.Bool("B_MISSING", Default("true")), true},
		{"one of", l.OneOf("O", []string{"sandbox", "live"}), "sandbox"},
		{"url", l.URL("U", []string{"postgres"}).String(), "postgres://app:pw@db:5432/core?sslmode=disable"},
		{"url optional", l.URL("U_MISSING", nil, Optional()) == nil, true},
		{"environment", l.Environment("E"), Production},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	if err := l.Err(); err != nil {
		t.Fatalf("unexpected errors: %v", err)
	}
}

func TestProblems(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		read func(l *Loader)
		want string // the one problem reported
	}{
		{"required", nil, func(l *Loader) { l.String("X") }, "X: is required but not set"},
		{"empty", map[string]string{"X": ""}, func(l *Loader) { l.String("X", Default("a")) },
			"X: is set but empty; unset it to use the default"},
		{"int syntax", map[string]string{"X": "12a"}, func(l *Loader) { l.Int("X", 0, 100) },
			`X: must be an integer from 0 to 100 (got "12a")`},
		{"int range", map[string]string{"X": "0"}, func(l *Loader) { l.Int("X", 1, 65535) },
			`X: must be an integer from 1 to 65535 (got "0")`},
		{"bad default", nil, func(l *Loader) { l.Int("X", 1, 10, Default("11")) },
			`X: must be an integer from 1 to 10 (the default "11" is invalid)`},
		{"bare number duration", map[string]string{"X": "30"}, func(l *Loader) { l.Duration("X", 0, time.Minute) },
			`X: must be a duration such as 30s or 5m, from 0s to 1m0s (got "30")`},
		{"bare zero duration", map[string]string{"X": "0"}, func(l *Loader) { l.Duration("X", 0, time.Minute) },
			`X: must be a duration such as 30s or 5m, from 0s to 1m0s (got "0")`},
		{"negative duration", map[string]string{"X": "-1s"}, func(l *Loader) { l.Duration("X", 0, time.Minute) },
			`X: must be a duration such as 30s or 5m, from 0s to 1m0s (got "-1s")`},
		{"bool spelling", map[string]string{"X": "True"}, func(l *Loader) { l.Bool("X") },
			`X: must be true or false (got "True")`},
		{"one of", map[string]string{"X": "Live"}, func(l *Loader) { l.OneOf("X", []string{"test", "live"}) },
			`X: must be one of test, live (got "Live")`},
		{"environment case", map[string]string{"X": "Production"}, func(l *Loader) { l.Environment("X") },
			`X: must be one of development, sandbox, production (got "Production")`},
		{"environment abbreviation", map[string]string{"X": "prod"}, func(l *Loader) { l.Environment("X") },
			`X: must be one of development, sandbox, production (got "prod")`},
		{"url relative", map[string]string{"X": "/path"}, func(l *Loader) { l.URL("X", nil) },
			"X: must be an absolute URL such as https://host:port/path"},
		{"url scheme", map[string]string{"X": "http://h"}, func(l *Loader) { l.URL("X", []string{"https"}) },
			"X: scheme must be one of https"},
		{"url text is not echoed", map[string]string{"X": "postgres://u:pw-s3cr3t@h:bad/"}, func(l *Loader) { l.URL("X", nil) },
			"X: must be an absolute URL such as https://host:port/path"},
		{"sensitive name is not echoed", map[string]string{"DB_PASSWORD": "s3cr3t"}, func(l *Loader) { l.Int("DB_PASSWORD", 0, 1) },
			"DB_PASSWORD: must be an integer from 0 to 1"},
		{"cross-field rule", nil, func(l *Loader) { l.Invalid("KEY_BACKEND", "local is allowed only in development") },
			"KEY_BACKEND: local is allowed only in development"},
		{"refused", map[string]string{"OWNER_URL": "postgres://o:s3cr3t@h/db"}, func(l *Loader) { l.Refuse("OWNER_URL", "is for the migrate command only") },
			"OWNER_URL: is for the migrate command only"},
		{"refused as a file", map[string]string{"OWNER_URL_FILE": "/run/s3cr3t"}, func(l *Loader) { l.Refuse("OWNER_URL", "is for the migrate command only") },
			"OWNER_URL: is for the migrate command only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLoader(MapLookup(tt.env))
			tt.read(l)
			var es Errors
			if !errors.As(l.Err(), &es) || len(es) != 1 {
				t.Fatalf("Err() = %v, want one problem", l.Err())
			}
			if got := es[0].Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.Contains(l.Err().Error(), "s3cr3t") || strings.Contains(l.Redacted(), "s3cr3t") {
				t.Errorf("secret value leaked: %v / %s", l.Err(), l.Redacted())
			}
		})
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	l := NewLoader(MapLookup(map[string]string{"PORT": "x", "ENV": "prod"}))
	l.Int("PORT", 1, 65535)
	l.Environment("ENV")
	l.Secret("TOKEN")
	err := l.Err()
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("got %v, want 3 problems", err)
	}
	var ve *VarError
	if !errors.As(err, &ve) || ve.Name != "PORT" {
		t.Errorf("errors.As(*VarError) = %v", ve)
	}
	want := "config: 3 problems:\n" +
		`  PORT: must be an integer from 1 to 65535 (got "x")` + "\n" +
		`  ENV: must be one of development, sandbox, production (got "prod")` + "\n" +
		"  TOKEN: is required but not set (nor is TOKEN_FILE)"
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
}

func TestSecret(t *testing.T) {
	files := map[string]string{
		"/run/secrets/key":   "file-s3cr3t\n",
		"/run/secrets/crlf":  "crlf-s3cr3t\r\n",
		"/run/secrets/empty": "\n",
	}
	readFile := func(path string) ([]byte, error) {
		if s, ok := files[path]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	tests := []struct {
		name    string
		env     map[string]string
		opts    []Option
		want    string
		problem string
	}{
		{"from env", map[string]string{"K": "env-s3cr3t"}, nil, "env-s3cr3t", ""},
		{"from file", map[string]string{"K_FILE": "/run/secrets/key"}, nil, "file-s3cr3t", ""},
		{"crlf file", map[string]string{"K_FILE": "/run/secrets/crlf"}, nil, "crlf-s3cr3t", ""},
		{"optional unset", nil, []Option{Optional()}, "", ""},
		{"both", map[string]string{"K": "a", "K_FILE": "/run/secrets/key"}, nil, "",
			"K: both K and K_FILE are set; set only one"},
		{"missing", nil, nil, "", "K: is required but not set (nor is K_FILE)"},
		{"missing file", map[string]string{"K_FILE": "/nope"}, nil, "",
			"K_FILE: cannot read the secret file: open /nope: file does not exist"},
		{"empty file", map[string]string{"K_FILE": "/run/secrets/empty"}, nil, "",
			"K_FILE: the secret file /run/secrets/empty is empty"},
		{"empty env", map[string]string{"K": ""}, nil, "", "K: is set but empty; unset it or give a value"},
		{"default refused", nil, []Option{Default("fallback")}, "", "K: a secret cannot have a default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLoader(MapLookup(tt.env), WithReadFile(readFile))
			got := l.Secret("K", tt.opts...)
			if got.Reveal() != tt.want {
				t.Errorf("Reveal() = %q, want %q", got.Reveal(), tt.want)
			}
			problem := ""
			if err := l.Err(); err != nil {
				problem = strings.TrimPrefix(err.Error(), "config: ")
			}
			if problem != tt.problem {
				t.Errorf("problem %q, want %q", problem, tt.problem)
			}
			if strings.Contains(problem+l.Redacted(), "s3cr3t") {
				t.Errorf("secret leaked: %s %s", problem, l.Redacted())
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	l := NewLoader(MapLookup(map[string]string{
		"ADDR":         ":9443",
		"DATABASE_URL": "postgres://app:pw-s3cr3t@db/core",
		"API_TOKEN":    "tok-s3cr3t",
		"VAULT_TOKEN":  "hvs-s3cr3t",
		"BAD_URL":      "postgres://app:pw-s3cr3t@db:port/",
	}))
	l.String("ADDR")
	l.URL("DATABASE_URL", []string{"postgres"})
	l.Secret("API_TOKEN")
	l.String("VAULT_TOKEN") // secret-looking name: masked though read as a string
	l.Int("WORKERS", 1, 8, Default("4"))
	l.String("OPTIONAL", Optional())
	l.URL("BAD_URL", nil)
	want := "ADDR=:9443 (env)\n" +
		"API_TOKEN=[REDACTED] (env)\n" +
		"BAD_URL=[REDACTED] (env)\n" +
		"DATABASE_URL=postgres://app:xxxxx@db/core (env)\n" +
		"OPTIONAL= (unset)\n" +
		"VAULT_TOKEN=[REDACTED] (env)\n" +
		"WORKERS=4 (default)\n"
	if got := l.Redacted(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRejectUnknown(t *testing.T) {
	environ := []string{"PAYORCH_ADDR=:1", "PAYORCH_ADRR=:2", "PAYORCH_KEY_FILE=/k", "HOME=/root", "PAYORCH_EMPTY", "PAYORCH_OTHERS=x", "PAYORCH_OTHERS2_FILE=/x"}
	l := NewLoader(EnvironLookup(environ), WithReadFile(func(string) ([]byte, error) { return []byte("k"), nil }))
	l.String("PAYORCH_ADDR")
	l.Secret("PAYORCH_KEY")
	l.Ignore("PAYORCH_OTHERS", "PAYORCH_OTHERS2") // another service's
	l.RejectUnknown(environ, "PAYORCH_")
	want := "config: 2 problems:\n  PAYORCH_ADRR: unknown variable (misspelt?)\n  PAYORCH_EMPTY: unknown variable (misspelt?)"
	if err := l.Err(); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestEnvironLookupLastWins(t *testing.T) {
	v, ok := EnvironLookup([]string{"A=1", "A=2=3"})("A")
	if !ok || v != "2=3" {
		t.Errorf("got %q %v", v, ok)
	}
}

func TestParseEnvironment(t *testing.T) {
	tests := []struct {
		in      string
		want    Environment
		wantErr bool
	}{
		{"development", Development, false},
		{"sandbox", Sandbox, false},
		{"production", Production, false},
		{"", "", true},
		{"Production", "", true},
		{"prod", "", true},
		{" production", "", true},
		{"dev", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEnvironment(tt.in)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("ParseEnvironment(%q) = %q, %v", tt.in, got, err)
			}
			if got.Valid() == tt.wantErr {
				t.Errorf("Valid() = %v", got.Valid())
			}
			var u Environment
			if err := u.UnmarshalText([]byte(tt.in)); (err != nil) != tt.wantErr || u != tt.want {
				t.Errorf("UnmarshalText(%q) = %q, %v", tt.in, u, err)
			}
		})
	}
}
