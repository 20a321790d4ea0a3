// Command core-api runs the non-PCI core: merchant accounts, buyers,
// payment methods by token (bank mandates through the sandbox mock-bank
// connector), payment services and card transactions. Configuration comes from the environment; see
// core-api/app/config.go.
//
//	core-api [serve]     run the service
//	core-api migrate     apply the core database's migrations as its owner role
//	                     (CORE_API_MIGRATE_DATABASE_URL); a deploy step
//	core-api token -scopes buyers.write,payment-methods.write [-merchant-account default | -all-merchant-accounts]
//	               [-lifetime 24h] [-key-dir .data/auth]
//	                     create an API key pair in key-dir if missing and print a bearer token
//	                     for one merchant account (default "default"), or for every one
//	core-api vault-setup -policies deploy/vault -out FILE
//	                     prepare Vault transit (mount, the derived credentials key, the policy)
//	                     with the privileged CORE_API_VAULT_TOKEN and write the runtime token to FILE
//	core-api user add -email EMAIL [-role admin|developer|viewer] [-merchant-accounts ID,ID|*] [-password-stdin]
//	                     add a dashboard user (CORE_API_DATABASE_URL); prints a generated password
//	core-api dashboard-key [-key-dir .data/dashboard-auth] [-rotate]
//	                     create (or rotate) the key that signs the dashboard's tokens
//	core-api reconcile-vault [-dry-run] [-grace 24h] [-max-shreds N] [-merchant-account-id ID]
//	                     run the vault reconciliation once now (docs/vault-reconciliation.md)
//	core-api help
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/payorch/core-api/app"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/pgdb"
	"github.com/payorch/shared/service"
)

func main() {
	// Log lines are batched (an access line per request would otherwise be
	// a write(2) on the request path); warnings and errors flush at once.
	out := logging.NewBufferedWriter(os.Stderr, logging.BufferOptions{})
	err := run(context.Background(), logging.New(out, slog.LevelInfo), os.Args[1:])
	_ = out.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "core-api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
	case "migrate":
		// A deploy step, before instances of a new build start; they serve
		// as the runtime role and never hold the owner's URL.
		if err := pgdb.MigrateCommand(ctx, os.Environ(), app.MigrateDatabaseURL, postgres.Migrate); err != nil {
			return err
		}
		fmt.Println("core database migrated")
		return nil
	case "token":
		return token(args, os.Stdout)
	case "user":
		return user(ctx, args, os.Stdin, os.Stdout)
	case "dashboard-key":
		return dashboardKey(args, os.Stdout)
	case "reconcile-vault":
		return reconcileVault(ctx, log, args, os.Stdout)
	case "vault-setup":
		return vaultSetup(ctx, args)
	case "help", "-h", "--help":
		fmt.Println("commands: serve, migrate, token, user, dashboard-key, reconcile-vault, vault-setup, help")
		return nil
	default:
		return fmt.Errorf("unknown command %q (commands: serve, migrate, token, user, dashboard-key, reconcile-vault, vault-setup, help)", cmd)
	}
	return service.Serve(ctx, log, app.EnvPrefixes, app.LoadConfig, app.New)
}
