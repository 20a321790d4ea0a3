package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/payorch/shared/auth"
)

// token mints a bearer token with an instance key pair kept in key-dir; the
// public key file is what core-api and vault-proxy load (AUTH_PUBLIC_KEYS_FILE).
func token(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	scopes := fs.String("scopes", "", "comma-separated scopes, e.g. buyers.write,*.read")
	lifetime := fs.Duration("lifetime", 24*time.Hour, "token lifetime (at most 720h)")
	keyDir := fs.String("key-dir", ".data/auth", "folder holding signing-key.pem and public-keys.pem")
	issuer := fs.String("issuer", "payorch", "issuer the key is registered under")
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
	tok, err := auth.IssueDevToken(*keyDir, *issuer, list, *lifetime, time.Now())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, tok)
	return err
}
