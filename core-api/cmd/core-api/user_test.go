package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/postgres/postgrestest"
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
	if _, err := svc.SignIn(ctx, "admin@example.com", m[1]); err != nil {
		t.Errorf("sign-in with the printed password = %v", err)
	}

	out.Reset()
	err := user(ctx, []string{"add", "-email", "dev@example.com", "-role", "developer", "-merchant-accounts", "default, acme",
		"-password-stdin"}, strings.NewReader("typed-password-1234\n"), &out)
	if err != nil || strings.Contains(out.String(), "password") {
		t.Fatalf("user add -password-stdin = %v, %q", err, out.String())
	}
	if s, err := svc.SignIn(ctx, "dev@example.com", "typed-password-1234"); err != nil || len(s.User.MerchantAccountIDs) != 2 {
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
