package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/payorch/certs"
)

func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".data", "certs")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	files := []string{
		certs.CAFile, certs.CAKeyFile,
		certs.VaultProxyCertFile, certs.VaultProxyKeyFile,
		certs.PublicCertFile, certs.PublicKeyFile,
		certs.CoreAPICertFile, certs.CoreAPIKeyFile,
	}

	tests := []struct {
		name     string
		at       time.Duration
		wantVerb string // "wrote" or "kept "
		reason   bool
	}{
		{"first run writes everything", 0, "wrote", true},
		{"second run keeps everything", time.Hour, "kept ", false},
		{"run near expiry rewrites everything", certs.LeafLifetime - 24*time.Hour, "wrote", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = now.Add(tt.at)
			var out, errOut bytes.Buffer
			if err := run([]string{"-dir", dir}, &out, &errOut, clock); err != nil {
				t.Fatalf("run: %v (stderr %q)", err, errOut.String())
			}
			for _, f := range files {
				if line := tt.wantVerb + " " + filepath.Join(dir, f) + "\n"; !strings.Contains(out.String(), line) {
					t.Errorf("output lacks %q:\n%s", line, out.String())
				}
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			if got := strings.Contains(out.String(), "regenerating"); got != tt.reason {
				t.Errorf("reason printed = %v, want %v:\n%s", got, tt.reason, out.String())
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	clock := time.Now
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-dir", file}, {"-nope"}, {"-dir", t.TempDir(), "extra"}} {
		var out, errOut bytes.Buffer
		if err := run(args, &out, &errOut, clock); err == nil {
			t.Errorf("run(%q) succeeded:\n%s", args, out.String())
		}
	}
}
