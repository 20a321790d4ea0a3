package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/shared/auth"
)

func TestUserAdd(t *testing.T) {
	dsn := postgrestest.Migrated(t).CoreDSN
	t.Setenv("CORE_API_DATABASE_URL", dsn)
	ctx := context.Background()

	var out bytes.Buffer
	if err := user(ctx, []string{"add", "-email", "Admin@Example.com"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^password: (\S+)$`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "admin@example.com, role admin, merchant accounts *") {
		t.Fatalf("output = %q", out.String())
	}
	svc := &dashboard.Service{Store: postgrestest.Open(t, dsn)}
	if s, err := svc.SignIn(ctx, "admin@example.com", m[1]); err != nil || !s.User.MustChangePassword {
		t.Errorf("sign-in with the printed password = %+v, %v; want a session that must change it", s, err)
	}

	out.Reset()
	err := user(ctx, []string{"add", "-email", "dev@example.com", "-role", "developer", "-merchant-accounts", "default, acme",
		"-password-stdin"}, strings.NewReader("typed-password-1234\n"), &out)
	if err != nil || strings.Contains(out.String(), "password") {
		t.Fatalf("user add -password-stdin = %v, %q", err, out.String())
	}
	if s, err := svc.SignIn(ctx, "dev@example.com", "typed-password-1234"); err != nil || len(s.User.MerchantAccountIDs) != 2 || s.User.MustChangePassword {
		t.Errorf("sign-in with the typed password = %+v, %v", s, err)
	}

	for _, args := range [][]string{
		nil,
		{"remove"},
		{"add", "-email", "admin@example.com"}, // taken
		{"add", "-email", "x@example.com", "-role", "root"}, // no such role
		{"add", "-email", "bad"},
	} {
		if err := user(ctx, args, nil, &out); err == nil {
			t.Errorf("user %v succeeded", args)
		}
	}
}

func TestDashboardKeyRotate(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := dashboardKey([]string{"-key-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	first := out.String()
	out.Reset()
	if err := dashboardKey([]string{"-key-dir", dir}, &out); err != nil || out.String() != first {
		t.Fatalf("second run = %q, %v; want the same key %q", out.String(), err, first)
	}
	out.Reset()
	if err := dashboardKey([]string{"-key-dir", dir, "-rotate"}, &out); err != nil || out.String() == first {
		t.Fatalf("rotate = %q, %v; want a new key", out.String(), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, auth.PublicKeysFile))
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := auth.ParsePublicKeysPEM(data); err != nil || len(keys) != 2 {
		t.Errorf("public keys after a rotation = %d, %v; want the old and the new", len(keys), err)
	}
}
