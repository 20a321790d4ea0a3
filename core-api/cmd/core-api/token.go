package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/payorch/shared/accountid"
	"github.com/payorch/shared/auth"
)

// token mints a bearer token with an instance key pair kept in key-dir; the
// public key file is what core-api and vault-proxy load (AUTH_PUBLIC_KEYS_FILE).
// The token acts in the one merchant account named (default "default"), or
// in every account only when -all-merchant-accounts asks for it: a grant
// that wide is never what a forgotten flag gives.
func token(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	scopes := fs.String("scopes", "", "comma-separated scopes, e.g. buyers.write,*.read")
	lifetime := fs.Duration("lifetime", 24*time.Hour, "token lifetime (at most 720h)")
	keyDir := fs.String("key-dir", ".data/auth", "folder holding signing-key.pem and public-keys.pem")
	issuer := fs.String("issuer", "payorch", "issuer the key is registered under")
	merchant := fs.String("merchant-account", auth.DefaultMerchantAccount, "the merchant account the token may act in")
	all := fs.Bool("all-merchant-accounts", false, "let the token act in every merchant account (merchant_account_ids [\"*\"])")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var list []string
	for _, s := range strings.Split(*scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return fmt.Errorf("token: -scopes is required")
	}
	accounts := []string{*merchant}
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "merchant-account" })
	switch {
	case *all && named:
		return errors.New("token: -merchant-account and -all-merchant-accounts exclude each other")
	case *all:
		accounts = []string{auth.AllMerchantAccounts}
	case !accountid.Valid(*merchant):
		return fmt.Errorf("token: -merchant-account %q does not match %s", *merchant, accountid.Pattern)
	}
	tok, err := auth.IssueDevToken(*keyDir, *issuer, list, *lifetime, time.Now(), accounts)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, tok)
	return err
}
