package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/payorch/core-api/app"
	"github.com/payorch/core-api/vaulttransit"
	"github.com/payorch/shared/config"
)

// vaultSetup prepares Vault transit for core-api with the privileged
// token in CORE_API_VAULT_TOKEN (root in development, an operator's
// elsewhere) and writes the runtime token it mints, for
// deploy/vault/core-api.hcl alone, to -out (mode 0600).
func vaultSetup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vault-setup", flag.ContinueOnError)
	policies := fs.String("policies", "deploy/vault", "folder holding the shipped policy files")
	out := fs.String("out", "", "env file to write CORE_API_VAULT_TOKEN (runtime) to, mode 0600")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("vault-setup: -out is required")
	}
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	cfg := app.LoadVaultConfig(l)
	if err := l.Err(); err != nil {
		return err
	}
	c, err := vaulttransit.New(cfg)
	if err != nil {
		return err
	}
	token, err := vaulttransit.Bootstrap(ctx, c, filepath.Join(*policies, vaulttransit.PolicyFile))
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(*out), "."+filepath.Base(*out)+".tmp")
	if err := os.WriteFile(tmp, []byte("CORE_API_VAULT_TOKEN="+token+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, *out)
}
