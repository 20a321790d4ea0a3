package main

import (
	"context"
	"fmt"
	"os"

	"github.com/payorch/core-api/app"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/shared/config"
)

// migrateCmd runs `core-api migrate`: the core database's pending
// migrations, as its owner role (CORE_API_MIGRATE_DATABASE_URL or _FILE).
// A deploy step, run before instances of a new build start; the instances
// themselves serve as the runtime role and never hold this URL.
func migrateCmd(ctx context.Context) error {
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	dsn := l.Secret(app.MigrateDatabaseURL).Reveal()
	if err := l.Err(); err != nil {
		return err
	}
	if err := postgres.Migrate(ctx, dsn); err != nil {
		return err
	}
	fmt.Println("core database migrated")
	return nil
}
