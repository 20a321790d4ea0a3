package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/app"
	"github.com/payorch/core-api/dashboard"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/config"
)

// user runs `core-api user add`: a dashboard user (the first admin of a
// new instance, typically) in the core database of CORE_API_DATABASE_URL.
// The password is read from standard input with -password-stdin, else
// generated and printed once, and then to be changed at first sign-in.
func user(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return errors.New("usage: core-api user add -email EMAIL [-role admin|developer|viewer] [-merchant-accounts ID,ID|*] [-password-stdin]")
	}
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	email := fs.String("email", "", "the user's email address, their sign-in name")
	role := fs.String("role", string(coreapi.RoleAdmin), "admin, developer or viewer")
	accounts := fs.String("merchant-accounts", "*", `comma-separated merchant account ids the user may act in; "*": every one`)
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input; else one is generated and printed")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	password := ""
	if *fromStdin {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		password = strings.TrimRight(line, "\r\n")
	} else {
		password = rand.Text() // 26 base32 characters: 128 bits
	}
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	dsn := l.Secret("CORE_API_DATABASE_URL").Reveal()
	if err := l.Err(); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var ids []string
	for _, id := range strings.Split(*accounts, ",") {
		ids = append(ids, strings.TrimSpace(id))
	}
	u, err := app.NewDashboardService(db).AddUser(ctx, dashboard.NewUser{Email: *email, Password: password,
		Role: coreapi.DashboardRole(*role), MerchantAccountIDs: ids, MustChangePassword: !*fromStdin})
	if err != nil {
		return fmt.Errorf("user add: %w", err)
	}
	fmt.Fprintf(out, "dashboard user %s added: %s, role %s, merchant accounts %s\n", u.ID, u.Email, u.Role, strings.Join(u.MerchantAccountIDs, ","))
	if !*fromStdin {
		fmt.Fprintf(out, "password: %s\n", password)
		fmt.Fprintln(out, "(to be changed at the first sign-in)")
	}
	return nil
}
