package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/payorch/core-api/app"
	"github.com/payorch/core-api/reconcile"
	"github.com/payorch/shared/config"
)

// reconcileVault runs `core-api reconcile-vault`: the vault reconciliation
// once, now, with the service's configuration (its environment), and
// prints what it found and did. It exits non-zero when anything failed or
// the run found more than -max-shreds records without a payment method.
func reconcileVault(ctx context.Context, log *slog.Logger, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("reconcile-vault", flag.ContinueOnError)
	grace := fs.Duration("grace", 0, "shred records that no payment method has held for this long (default: CORE_API_VAULT_RECONCILE_GRACE)")
	maxShreds := fs.Int("max-shreds", -1, "shred nothing if more records than this have no payment method; 0: no limit (default: CORE_API_VAULT_RECONCILE_MAX_SHREDS)")
	merchant := fs.String("merchant-account-id", "", "only this merchant account's records")
	dryRun := fs.Bool("dry-run", false, "list the records that have no payment method; shred nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	environ := os.Environ()
	l := config.NewLoader(config.EnvironLookup(environ))
	cfg := app.LoadConfig(l)
	l.RejectUnknown(environ, app.EnvPrefixes...)
	if err := l.Err(); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if *grace != 0 {
		cfg.VaultReconcileGrace = *grace
	}
	res, err := app.ReconcileVault(ctx, cfg, log, reconcile.Options{MerchantAccountID: *merchant, DryRun: *dryRun},
		func(j *reconcile.Job) {
			if *maxShreds >= 0 {
				j.MaxShreds = *maxShreds
			}
		})
	if res != nil {
		printResult(out, res, *dryRun)
	}
	if errors.Is(err, reconcile.ErrBusy) {
		return errors.New("another core-api instance is reconciling the vault now; try again later")
	}
	return err
}

// printResult writes a run's result, one fact a line: ids and counts, no
// card data (there is none to print).
func printResult(out io.Writer, res *reconcile.Result, dryRun bool) {
	fmt.Fprintf(out, "run %s: checked %d vaulted records created before %s\n", res.RunID, res.Checked, res.CreatedBefore.UTC().Format(time.RFC3339Nano))
	for _, r := range res.Unclaimed {
		fmt.Fprintf(out, "no payment method: %s merchant_account_id=%s kind=%s created_at=%s\n", r.ID, r.MerchantAccountID, r.Kind, r.CreatedAt)
	}
	if dryRun {
		fmt.Fprintln(out, "dry run: nothing shredded")
		return
	}
	fmt.Fprintf(out, "shredded %d\nalready gone %d\nkept %d\n", res.Shredded, res.Gone, res.Kept)
}
