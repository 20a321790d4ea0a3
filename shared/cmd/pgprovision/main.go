// Command pgprovision creates the vault and core databases and their roles
// (see package pgsetup) and prints the two service URLs as env lines:
//
//	pgprovision -admin postgres://postgres@127.0.0.1:5432/postgres
//	VAULT_PROXY_DATABASE_URL=postgres://payorch_vault@127.0.0.1:5432/payorch_vault
//	CORE_API_DATABASE_URL=postgres://payorch_core@127.0.0.1:5432/payorch_core
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
	vaultDB := flag.String("vault-db", "payorch_vault", "vault database name")
	coreDB := flag.String("core-db", "payorch_core", "core database name")
	flag.Parse()
	if err := run(*admin, *vaultDB, *coreDB); err != nil {
		fmt.Fprintln(os.Stderr, "pgprovision:", err)
		os.Exit(1)
	}
}

func run(admin, vaultDB, coreDB string) error {
	if admin == "" {
		return fmt.Errorf("-admin or DATABASE_URL is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v := pgsetup.Database{Name: vaultDB, Role: "payorch_vault"}
	c := pgsetup.Database{Name: coreDB, Role: "payorch_core"}
	if err := pgsetup.Provision(ctx, admin, v, c); err != nil {
		return err
	}
	for _, d := range []struct {
		env string
		db  pgsetup.Database
	}{{"VAULT_PROXY_DATABASE_URL", v}, {"CORE_API_DATABASE_URL", c}} {
		dsn, err := pgsetup.DSN(admin, d.db)
		if err != nil {
			return err
		}
		fmt.Printf("%s=%s\n", d.env, dsn)
	}
	return nil
}
