package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/payorch/shared/config"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/app"
	"github.com/payorch/vault-proxy/keys"
	"github.com/payorch/vault-proxy/postgres"
)

// keysCmd runs `vault-proxy keys status|rotate` with the key-admin token
// (VAULT_TOKEN must hold deploy/vault/vault-proxy-keyadmin.hcl).
func keysCmd(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("keys: status or rotate")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	batch := fs.Int("batch", 100, "data keys per rewrap call")
	retire := fs.Bool("retire", false, "after rewrapping, make older key versions unusable (min_decryption_version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	tcfg := app.LoadTransitConfig(l)
	dsn := l.Secret("VAULT_PROXY_DATABASE_URL").Reveal()
	if err := l.Err(); err != nil {
		return err
	}
	tr, err := transit.New(tcfg)
	if err != nil {
		return err
	}
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	switch sub {
	case "status":
		s, err := keys.GetStatus(ctx, tr, db)
		if err != nil {
			return err
		}
		s.Print(os.Stdout)
		return nil
	case "rotate":
		n, err := keys.Rotate(ctx, tr, db, keys.RotateOptions{BatchSize: *batch, Retire: *retire, Progress: os.Stdout})
		if err != nil {
			return fmt.Errorf("keys rotate: stopped after %d data keys: %w", n, err)
		}
		fmt.Printf("done: %d data keys rewrapped\n", n)
		return nil
	}
	return fmt.Errorf("keys: unknown subcommand %q (status, rotate)", sub)
}
