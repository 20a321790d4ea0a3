// Package reconcile is the vault reconciliation: it finds the records the
// vault holds per token (cards, gift cards, bank accounts) that no payment
// method holds a grace period after they were vaulted, and has vault-proxy
// crypto-shred them. Such a record is left when a payment method's
// creation stops between its two halves (vault-proxy vaults the card, then
// core-api stores the payment method): a process killed in between, an
// answer vault-proxy could not get (it keeps the card when it cannot tell
// whether core-api stored the payment method), a rollback that failed.
// Nothing would ever use or remove it, and card data kept without a need
// breaks PCI DSS 3.2.1. docs/vault-reconciliation.md says why core-api
// drives it and what keeps it from shredding a card that is in use.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/periodic"
	"github.com/payorch/shared/requestid"
	"github.com/payorch/shared/zone"
)

// Store is core-api's database, as the reconciliation needs it
// (postgres.DB).
type Store interface {
	// LockReconciliation takes, without waiting, the lock that one run at
	// a time holds across instances; ok is false when another holds it.
	LockReconciliation(ctx context.Context) (release func(), ok bool, err error)
	// WithoutPaymentMethod returns those of ids that no payment method
	// has, in order.
	WithoutPaymentMethod(ctx context.Context, ids []string) ([]string, error)
	// GiveUpToken records, unless a payment method has the token (then
	// false), that none will ever be created with it; one step to a
	// creation of a payment method with it.
	GiveUpToken(ctx context.Context, id, merchant, kind string, vaultedAt time.Time) (bool, error)
	// TokenShredded records that vault-proxy no longer holds the record.
	TokenShredded(ctx context.Context, id string) error
}

// VaultProxy is vault-proxy's side (vaultclient.Client). ShredUnclaimed's
// refusal of a record younger than vault-proxy's minimum age is
// coreapi.ErrVaultedRecordTooYoung, and a record already gone is
// coreapi.ErrVaultProxyNotFound.
type VaultProxy interface {
	VaultedRecords(ctx context.Context, q coreapi.VaultedRecordsQuery) (*zone.VaultedRecordPage, error)
	ShredUnclaimed(ctx context.Context, merchant, actor, token string) error
}

// Actor is who asks vault-proxy to shred, in its audit trail
// ("core-api:reconcile").
const Actor = "reconcile"

// Job is the reconciliation. Run runs it once; Every, periodically.
type Job struct {
	Store      Store
	VaultProxy VaultProxy
	Log        *slog.Logger
	// Grace is how long after it was vaulted a record must still have no
	// payment method to be shredded. vault-proxy applies its own minimum
	// age as well (VAULT_PROXY_RECONCILE_MIN_AGE): the longer one rules.
	Grace time.Duration
	// MaxShreds (0: no limit) stops a run that finds more records without
	// a payment method before it shreds any: so many at once are more
	// likely a core database that lost rows (a restore from an older
	// backup, the wrong database) than interrupted creations, and
	// shredding cannot be undone. An operator who has checked runs
	// `core-api reconcile-vault -max-shreds 0`.
	MaxShreds int
	PageSize  int              // records per page from vault-proxy (0: zone.MaxReconcileLimit)
	Now       func() time.Time // nil: time.Now
}

// Options narrow one run.
type Options struct {
	MerchantAccountID string // "": every merchant account
	DryRun            bool   // find, but give up and shred nothing
}

// Result is what a run found and did.
type Result struct {
	RunID         string               // the X-Request-Id of the run's calls to vault-proxy
	CreatedBefore time.Time            // records vaulted before it were checked
	Checked       int                  // records old enough, checked against the payment methods
	Unclaimed     []zone.VaultedRecord // of those, the ones no payment method had
	Shredded      int                  // shredded by vault-proxy
	Gone          int                  // already gone from the vault
	Kept          int                  // a payment method took the token first, or vault-proxy found it too young
}

// ErrBusy is a run that did not start: another is under way (this
// instance's or another's).
var ErrBusy = errors.New("reconcile: another reconciliation is running")

// TooManyError is a run that found more records without a payment method
// than MaxShreds, and shredded none.
type TooManyError struct{ Max int }

func (e *TooManyError) Error() string {
	return fmt.Sprintf("reconcile: more than %d vaulted records have no payment method; none was shredded: "+
		"check that core-api's database is complete, then run core-api reconcile-vault -max-shreds 0", e.Max)
}

// Run pages through the vault's records old enough, finds those no
// payment method has, and gives each up and has it shredded. Records are
// taken one by one: a failure of one is reported with the others' (the
// errors joined) and retried by the next run. A run cut short by ctx
// leaves nothing half done that the next run does not finish.
func (j *Job) Run(ctx context.Context, opts Options) (*Result, error) {
	release, ok, err := j.Store.LockReconciliation(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrBusy
	}
	defer release()
	now := time.Now
	if j.Now != nil {
		now = j.Now
	}
	res := &Result{CreatedBefore: now().Add(-j.Grace), RunID: requestid.Generate()}
	// Every call of the run carries its id: vault-proxy's audit records of
	// its shreds name it as their request id, and so do this run's logs.
	ctx = requestid.WithID(ctx, res.RunID)
	if err := j.find(ctx, opts, res); err != nil {
		return res, err
	}
	if opts.DryRun {
		return res, nil
	}
	var errs []error
	for _, r := range res.Unclaimed {
		if ctx.Err() != nil {
			return res, errors.Join(append(errs, ctx.Err())...)
		}
		if err := j.shred(ctx, r, res); err != nil {
			errs = append(errs, fmt.Errorf("reconcile: token %s: %w", r.ID, err))
		}
	}
	return res, errors.Join(errs...)
}

// find pages through the vault's records into res.
func (j *Job) find(ctx context.Context, opts Options, res *Result) error {
	q := coreapi.VaultedRecordsQuery{CreatedBefore: res.CreatedBefore, MerchantAccountID: opts.MerchantAccountID, Limit: j.PageSize}
	if q.Limit == 0 {
		q.Limit = zone.MaxReconcileLimit
	}
	for {
		page, err := j.VaultProxy.VaultedRecords(ctx, q)
		if err != nil {
			return err
		}
		ids := make([]string, len(page.Items))
		for i, r := range page.Items {
			ids[i] = r.ID
		}
		free, err := j.Store.WithoutPaymentMethod(ctx, ids)
		if err != nil {
			return err
		}
		res.Checked += len(ids)
		for _, r := range page.Items {
			if len(free) > 0 && free[0] == r.ID { // both in page order
				res.Unclaimed, free = append(res.Unclaimed, r), free[1:]
			}
		}
		if j.MaxShreds > 0 && len(res.Unclaimed) > j.MaxShreds && !opts.DryRun {
			return &TooManyError{Max: j.MaxShreds}
		}
		if page.NextAfter == nil {
			return nil
		}
		q.After = *page.NextAfter
	}
}

// shred gives one record's token up and has vault-proxy shred it.
func (j *Job) shred(ctx context.Context, r zone.VaultedRecord, res *Result) error {
	vaulted, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("vault-proxy listed it with created_at %q", r.CreatedAt)
	}
	given, err := j.Store.GiveUpToken(ctx, r.ID, r.MerchantAccountID, r.Kind, vaulted)
	if err != nil {
		return err
	}
	if !given {
		// Created since the check: the payment method has the record now.
		res.Kept++
		return nil
	}
	err = j.VaultProxy.ShredUnclaimed(ctx, r.MerchantAccountID, Actor, r.ID)
	switch {
	case err == nil:
		res.Shredded++
		j.Log.InfoContext(ctx, "vault reconciliation: shredded a vaulted record that no payment method held",
			"run_id", res.RunID, "token", r.ID, "merchant_account_id", r.MerchantAccountID, "kind", r.Kind, "vaulted_at", r.CreatedAt)
	case errors.Is(err, coreapi.ErrVaultProxyNotFound):
		res.Gone++
	case errors.Is(err, coreapi.ErrVaultedRecordTooYoung):
		// Younger than vault-proxy's minimum age by its database's clock:
		// given up here, so the next run shreds it once it is old enough.
		res.Kept++
		return nil
	default:
		return err
	}
	return j.Store.TokenShredded(ctx, r.ID)
}

// Every runs the reconciliation first after first, then every interval,
// until ctx ends, logging what each run found and did; a run under way
// when ctx ends stops where it is.
func (j *Job) Every(ctx context.Context, first, interval time.Duration) {
	periodic.Every(ctx, first, interval, func(ctx context.Context) {
		res, err := j.Run(ctx, Options{})
		j.logRun(ctx, res, err)
	})
}

func (j *Job) logRun(ctx context.Context, res *Result, err error) {
	switch {
	case errors.Is(err, ErrBusy):
		j.Log.DebugContext(ctx, "vault reconciliation: another instance is running it")
		return
	case ctx.Err() != nil:
		return // stopping
	}
	var attrs []any
	if res != nil {
		attrs = []any{"run_id", res.RunID, "created_before", res.CreatedBefore, "checked", res.Checked, "unclaimed", len(res.Unclaimed),
			"shredded", res.Shredded, "gone", res.Gone, "kept", res.Kept}
	}
	if err != nil {
		j.Log.ErrorContext(ctx, "vault reconciliation failed", append(attrs, "err", err)...)
		return
	}
	j.Log.InfoContext(ctx, "vault reconciliation done", attrs...)
}
