// Package merchants is the service of merchant accounts, the tenants every
// other record belongs to. Creating and deleting one spans both zones: an
// account's id names records in vault-proxy too, so vault-proxy closes the
// id inside the transaction that deletes the account, and reopens it inside
// the one that creates an account with a deleted account's id.
package merchants

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/zone"
)

// Store is the core database as this service uses it.
type Store interface {
	// InTx runs fn in one database transaction: committed when fn returns
	// nil, rolled back otherwise.
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// TxCommitted waits until transaction txID (Tx.TxID) has ended, and
	// reports whether it committed.
	TxCommitted(ctx context.Context, txID string) (bool, error)

	FindMerchantAccount(ctx context.Context, id string) (*coreapi.MerchantAccount, error)
	// ListMerchantAccounts returns up to page.FetchLimit() accounts in the
	// page's query order; only is the set of ids to list (nil: all).
	ListMerchantAccounts(ctx context.Context, only []string, page pagination.Page) ([]coreapi.MerchantAccount, error)
	UpdateMerchantAccount(ctx context.Context, id string, u coreapi.MerchantAccountUpdate) (*coreapi.MerchantAccount, error)
}

// Tx is the core database within one transaction.
type Tx interface {
	// CreateMerchantAccount inserts an account; a taken id is a
	// *coreapi.DuplicateError.
	CreateMerchantAccount(ctx context.Context, n coreapi.NewMerchantAccount) (*coreapi.MerchantAccount, error)
	// DeletedMerchantAccount reports whether id was a deleted account's.
	DeletedMerchantAccount(ctx context.Context, id string) (bool, error)
	// LockMerchantAccount locks account id's row until the transaction
	// ends: no record referring to the account can be added meanwhile.
	LockMerchantAccount(ctx context.Context, id string) error
	// MerchantAccountUsage counts the records that keep account id in use:
	// only kinds with a count above zero.
	MerchantAccountUsage(ctx context.Context, id string) ([]coreapi.RecordCount, error)
	// DeleteMerchantAccount removes account id, locked and found unused;
	// a record the count does not cover is a
	// *coreapi.MerchantAccountInUseError.
	DeleteMerchantAccount(ctx context.Context, id string) error
	// TxID names the transaction for TxCommitted.
	TxID(ctx context.Context) (string, error)
}

// VaultProxy is vault-proxy's internal API for merchant accounts. Its
// errors match coreapi.ErrVaultProxyNotFound and
// coreapi.ErrVaultProxyRefused for those answers.
type VaultProxy interface {
	ReopenMerchantAccount(ctx context.Context, merchant string) (*zone.MerchantAccountClosure, error)
	CloseMerchantAccount(ctx context.Context, merchant, attempt string) (*zone.MerchantAccountClosure, error)
	CancelCloseMerchantAccount(ctx context.Context, merchant, attempt string) error
	MerchantAccountUsage(ctx context.Context, merchant string) (*zone.MerchantAccountUsage, error)
}

// Service manages merchant accounts.
type Service struct {
	Store      Store
	VaultProxy VaultProxy
	Log        *slog.Logger
}

// Create validates n and stores the account; a taken id is a
// *coreapi.DuplicateError. When the id was a deleted account's,
// vault-proxy reopens it inside the creating transaction, before it
// commits: a refusal (a *coreapi.VaultProxyInUseError: it still holds
// records under the id) or a failure creates nothing.
func (s *Service) Create(ctx context.Context, n coreapi.NewMerchantAccount) (*coreapi.MerchantAccount, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	var a *coreapi.MerchantAccount
	err := s.Store.InTx(ctx, func(tx Tx) error {
		var err error
		if a, err = tx.CreateMerchantAccount(ctx, n); err != nil {
			return err
		}
		deleted, err := tx.DeletedMerchantAccount(ctx, *n.ID)
		if err != nil || !deleted {
			return err
		}
		return s.reopen(ctx, *n.ID)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// reopen has vault-proxy reopen the id of a deleted account.
func (s *Service) reopen(ctx context.Context, id string) error {
	c, err := s.VaultProxy.ReopenMerchantAccount(ctx, id)
	if err != nil {
		return &coreapi.VaultProxyError{Err: err, Unanswered: "could not reopen the id of a deleted account; nothing was created"}
	}
	if used := usedRecords(c.Records); len(used) > 0 {
		return &coreapi.VaultProxyInUseError{Records: used}
	}
	return nil
}

// Get returns account id or an error wrapping coreapi.ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (*coreapi.MerchantAccount, error) {
	return s.Store.FindMerchantAccount(ctx, id)
}

// List returns a page of accounts; only is the set of ids the caller may
// see (nil: all).
func (s *Service) List(ctx context.Context, only []string, page pagination.Page) ([]coreapi.MerchantAccount, error) {
	return s.Store.ListMerchantAccounts(ctx, only, page)
}

// Update validates u and changes account id.
func (s *Service) Update(ctx context.Context, id string, u coreapi.MerchantAccountUpdate) (*coreapi.MerchantAccount, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	return s.Store.UpdateMerchantAccount(ctx, id, u)
}

// Delete removes account id. It is refused while the account has buyers or
// any other record, in core-api (a *coreapi.MerchantAccountInUseError) or
// in vault-proxy (a *coreapi.VaultProxyInUseError): deleting a tenant is
// never a cascade, and what vault-proxy holds under the account's id
// (forwarding credentials, cards, network tokens) would otherwise pass to
// a later account with the same id. Once core-api's records allow it,
// vault-proxy closes the id inside the deleting transaction, with the
// account's row locked: it refuses while it holds anything, and stores
// nothing for the id after it (migration 011 of vault-proxy). A closure
// whose deletion then fails here is cancelled.
func (s *Service) Delete(ctx context.Context, id string) error {
	attempt := uuid.NewString()
	closed := false
	var txID string
	err := s.Store.InTx(ctx, func(tx Tx) error {
		if err := tx.LockMerchantAccount(ctx, id); err != nil {
			return err
		}
		in, err := tx.MerchantAccountUsage(ctx, id)
		if err != nil {
			return err
		}
		if len(in) > 0 {
			return &coreapi.MerchantAccountInUseError{Core: in}
		}
		// Named before vault-proxy is asked: if the deletion then fails,
		// whether it committed all the same decides the closure's fate.
		if txID, err = tx.TxID(ctx); err != nil {
			return err
		}
		if err := s.close(ctx, id, attempt); err != nil {
			return err
		}
		closed = true
		return tx.DeleteMerchantAccount(ctx, id)
	})
	if err != nil && closed {
		err = s.afterFailedDeletion(ctx, id, attempt, txID, err)
	}
	if iu := (*coreapi.MerchantAccountInUseError)(nil); errors.As(err, &iu) {
		iu.VaultProxy = s.vaultProxyUsage(ctx, id)
	}
	return err
}

// close has vault-proxy close the account's id for deletion attempt
// attempt, inside the deleting transaction.
func (s *Service) close(ctx context.Context, id, attempt string) error {
	// Not cut short by the client, so that the answer usually comes.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultProxyCloseWait)
	defer cancel()
	c, err := s.VaultProxy.CloseMerchantAccount(cctx, id, attempt)
	if err != nil {
		if mayHaveChanged(err) {
			s.cancelClosure(ctx, id, attempt)
		}
		return &coreapi.VaultProxyError{Err: err, Unanswered: "could not say what it holds for this account; nothing was deleted"}
	}
	if !c.Closed {
		return &coreapi.VaultProxyInUseError{Records: usedRecords(c.Records)}
	}
	return nil
}

// usedRecords keeps the kinds with a count above zero.
func usedRecords(records []zone.UsageRecord) []coreapi.RecordCount {
	var in []coreapi.RecordCount
	for _, u := range records {
		if u.Count > 0 {
			in = append(in, coreapi.RecordCount(u))
		}
	}
	return in
}

// vaultProxyUsage is what vault-proxy holds for an account that core-api's
// own records already keep, to name it in the same answer; nil when
// vault-proxy cannot say (the answer is 409 either way).
func (s *Service) vaultProxyUsage(ctx context.Context, id string) []coreapi.RecordCount {
	u, err := s.VaultProxy.MerchantAccountUsage(ctx, id)
	if err != nil {
		s.Log.WarnContext(ctx, "vault-proxy did not say what it holds for a merchant account in use", "merchant_account_id", id, "error", err)
		return nil
	}
	return usedRecords(u.Records)
}

// afterFailedDeletion settles a deletion whose transaction failed after
// vault-proxy closed the account: once the transaction has ended, a
// rollback cancels the attempt's closure, and a commit whose answer was
// lost is the deletion done (nil). When the outcome cannot be learnt the
// closure is kept (the account may be gone) and the error logged: a live
// account left closed takes no new payment method or vault-forward config
// until it is deleted again or the closure is cancelled by hand.
func (s *Service) afterFailedDeletion(ctx context.Context, id, attempt, txID string, err error) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultProxyCloseWait)
	defer cancel()
	committed, oerr := s.Store.TxCommitted(dctx, txID)
	switch {
	case oerr != nil:
		s.Log.ErrorContext(ctx, "a merchant account's deletion failed with an unknown outcome; vault-proxy keeps it closed",
			"merchant_account_id", id, "attempt_id", attempt, "error", oerr)
	case committed:
		return nil
	default:
		s.cancelClosure(ctx, id, attempt)
	}
	return err
}

// vaultProxyCloseWait bounds each call to vault-proxy about a deletion
// (the close, its cancellation), made while the account's row is locked.
// vault-proxy gives each at most 5 s, its lock wait included.
const vaultProxyCloseWait = 10 * time.Second

// mayHaveChanged reports whether a failed call to vault-proxy may still
// have done its work: no answer, or a server error, as opposed to a
// refusal it stands by.
func mayHaveChanged(err error) bool {
	return !errors.Is(err, coreapi.ErrVaultProxyNotFound) && !errors.Is(err, coreapi.ErrVaultProxyRefused)
}

// cancelClosure undoes vault-proxy's closure of the account by deletion
// attempt attempt, which failed after it. The attempt's id fences it: it
// undoes no other deletion's closure, and a close of this attempt arriving
// after it is refused. It runs whatever the request's fate; an account it
// cannot reopen takes no new payment method or vault-forward config until
// it is deleted (DELETE again) or the closure is cancelled by hand
// (docs/api-conventions.md).
func (s *Service) cancelClosure(ctx context.Context, id, attempt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vaultProxyCloseWait)
	defer cancel()
	if err := s.VaultProxy.CancelCloseMerchantAccount(ctx, id, attempt); err != nil {
		s.Log.ErrorContext(ctx, "a merchant account whose deletion failed may stay closed in vault-proxy; delete it again or cancel the closure",
			"merchant_account_id", id, "attempt_id", attempt, "error", err)
	}
}
