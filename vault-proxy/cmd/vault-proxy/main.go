// Command vault-proxy runs the PCI zone: the only process that sees card
// numbers. Subcommands:
//
//	vault-proxy [serve]                  run the service (configuration from the environment)
//	vault-proxy migrate                  apply the vault database's migrations as its owner role
//	                                     (VAULT_PROXY_MIGRATE_DATABASE_URL); a deploy step
//	vault-proxy vault-setup -policies DIR -out FILE
//	                                     with an operator's VAULT_TOKEN: mount transit, create the
//	                                     keys, install the shipped policies, write policy-bound tokens
//	vault-proxy keys status|rotate       key management with the key-admin token
//	vault-proxy audit verify [-anchor ID:HASH]
//	                                     walk the audit chain; fail naming the first broken link
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/payorch/shared/config"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/pgdb"
	"github.com/payorch/shared/service"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/app"
	"github.com/payorch/vault-proxy/nodump"
	"github.com/payorch/vault-proxy/postgres"
)

func main() {
	// Log lines are batched (an access line per request would otherwise be
	// a write(2) on the request path); warnings and errors flush at once.
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := run(context.Background(), logging.New(out, slog.LevelInfo), os.Args[1:])
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vault-proxy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	// Before any card, key or Vault token is in memory, whatever the
	// subcommand (keys and vault-setup hold operator tokens): no core file
	// of this process, and no reading its memory from another process of
	// the same user.
	if err := nodump.Apply(); err != nil {
		return err
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, log)
	case "vault-setup":
		return vaultSetup(ctx, args)
	case "migrate":
		// A deploy step, before instances of a new build start; they serve
		// as the runtime role and never hold the owner's URL.
		if err := pgdb.MigrateCommand(ctx, os.Environ(), app.MigrateDatabaseURL, postgres.Migrate); err != nil {
			return err
		}
		fmt.Println("vault database migrated")
		return nil
	case "keys":
		return keysCmd(ctx, args)
	case "audit":
		return auditCmd(ctx, args, os.Stdout)
	}
	return fmt.Errorf("unknown command %q (commands: serve, migrate, vault-setup, keys, audit)", cmd)
}

func serve(ctx context.Context, log *slog.Logger) error {
	return service.Serve(ctx, log, app.EnvPrefixes, app.LoadConfig, app.New)
}

func vaultSetup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vault-setup", flag.ContinueOnError)
	policies := fs.String("policies", "deploy/vault", "folder holding the shipped policy files")
	out := fs.String("out", "", "env file to write VAULT_TOKEN (runtime) and VAULT_KEYADMIN_TOKEN to, mode 0600")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("vault-setup: -out is required")
	}
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	cfg := app.LoadTransitConfig(l)
	if err := l.Err(); err != nil {
		return err
	}
	c, err := transit.New(cfg)
	if err != nil {
		return err
	}
	toks, err := transit.Bootstrap(ctx, c, *policies)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("VAULT_TOKEN=%s\nVAULT_KEYADMIN_TOKEN=%s\n", toks.Service, toks.KeyAdmin)
	tmp := filepath.Join(filepath.Dir(*out), "."+filepath.Base(*out)+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, *out)
}
