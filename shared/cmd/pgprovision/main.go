// Command pgprovision creates the vault and core databases and their owner
// and runtime roles (see package pgsetup) and prints each service's two
// URLs as env lines: the runtime role's, which the service serves with,
// and the owner's, which only its migrate command uses.
//
//	pgprovision -admin postgres://postgres@127.0.0.1:5432/postgres
//	VAULT_PROXY_DATABASE_URL=postgres://payorch_vault@127.0.0.1:5432/payorch_vault
//	VAULT_PROXY_MIGRATE_DATABASE_URL=postgres://payorch_vault_owner@127.0.0.1:5432/payorch_vault
//	CORE_API_DATABASE_URL=postgres://payorch_core@127.0.0.1:5432/payorch_core
//	CORE_API_MIGRATE_DATABASE_URL=postgres://payorch_core_owner@127.0.0.1:5432/payorch_core
//
// An empty -vault-db or -core-db leaves that zone out, for a cluster that
// holds only the other zone's database (production: one cluster per zone).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/payorch/shared/pgsetup"
)

func main() {
	admin := flag.String("admin", os.Getenv("DATABASE_URL"), "admin PostgreSQL URL")
	vaultDB := flag.String("vault-db", "payorch_vault", "vault database name (empty: none)")
	coreDB := flag.String("core-db", "payorch_core", "core database name (empty: none)")
	flag.Parse()
	if err := run(*admin, *vaultDB, *coreDB); err != nil {
		fmt.Fprintln(os.Stderr, "pgprovision:", err)
		os.Exit(1)
	}
}

// zone is one database and the prefix of its service's variables.
type zone struct {
	prefix string
	db     pgsetup.Database
}

func run(admin, vaultDB, coreDB string) error {
	if admin == "" {
		return fmt.Errorf("-admin or DATABASE_URL is required")
	}
	var zones []zone
	if vaultDB != "" {
		zones = append(zones, zone{"VAULT_PROXY_", pgsetup.Vault(vaultDB)})
	}
	if coreDB != "" {
		zones = append(zones, zone{"CORE_API_", pgsetup.Core(coreDB)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, z := range zones {
		if err := pgsetup.Provision(ctx, admin, z.db); err != nil {
			return err
		}
	}
	for _, z := range zones {
		for _, v := range []struct{ name, role string }{{"DATABASE_URL", z.db.Role}, {"MIGRATE_DATABASE_URL", z.db.Owner}} {
			dsn, err := pgsetup.DSN(admin, z.db.Name, v.role)
			if err != nil {
				return err
			}
			fmt.Printf("%s%s=%s\n", z.prefix, v.name, dsn)
		}
	}
	return nil
}
