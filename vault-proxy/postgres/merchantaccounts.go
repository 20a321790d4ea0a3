package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	vaultproxy "github.com/payorch/vault-proxy"
)

// Names of what the vault database can hold for a merchant account, as
// MerchantAccountUsage reports them (and GET
// /internal/merchant-accounts/{id}/usage sends them to core-api).
const (
	UsagePaymentMethods         = "payment-methods"               // vaulted cards, gift cards, bank accounts
	UsageNetworkTokens          = "network-tokens"                // live ones: a deleted token is history
	UsageForwardConfigs         = "vault-forward-configs"         // allowed hosts
	UsageForwardAuthentications = "vault-forward-authentications" // sealed credentials
)

// rowQuerier is the pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// MerchantAccountUsage counts what the vault database still holds for a
// merchant account, by the names above (every name, zero or not), so
// core-api can refuse to delete an account whose secrets would otherwise
// pass to a later account with the same id. The audit trail is history,
// not a holding, and is not counted. One statement, so the counts are of
// one snapshot.
func (db *DB) MerchantAccountUsage(ctx context.Context, merchantAccountID string) (map[string]int64, error) {
	return merchantUsage(ctx, db.Pool, merchantAccountID)
}

func merchantUsage(ctx context.Context, q rowQuerier, merchantAccountID string) (map[string]int64, error) {
	var cards, tokens, configs, auths int64
	err := q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM vaulted_cards WHERE merchant_account_id = $1),
		(SELECT count(*) FROM network_tokens WHERE merchant_account_id = $1 AND status <> 'deleted'),
		(SELECT count(*) FROM forward_configs WHERE merchant_account_id = $1),
		(SELECT count(*) FROM forward_auth_methods WHERE merchant_account_id = $1)`, merchantAccountID).
		Scan(&cards, &tokens, &configs, &auths)
	if err != nil {
		return nil, err
	}
	return map[string]int64{
		UsagePaymentMethods:         cards,
		UsageNetworkTokens:          tokens,
		UsageForwardConfigs:         configs,
		UsageForwardAuthentications: auths,
	}, nil
}

// lockMerchantAccountSQL takes the transaction-scoped advisory lock on a
// merchant account id ($1): exclusive to close or reopen the account,
// shared to store a holding for it (migration 011). The key is a 64-bit
// hash of the id; two ids that collide only wait for each other.
func lockMerchantAccountSQL(exclusive bool) string {
	fn := "pg_advisory_xact_lock_shared"
	if exclusive {
		fn = "pg_advisory_xact_lock"
	}
	return `SELECT ` + fn + `(hashtextextended('merchant-account:' || $1, 0))`
}

func lockMerchantAccount(ctx context.Context, tx pgx.Tx, merchantAccountID string, exclusive bool) error {
	_, err := tx.Exec(ctx, lockMerchantAccountSQL(exclusive), merchantAccountID)
	return err
}

// openForHoldings takes the shared lock on the account and refuses with
// vaultproxy.ErrMerchantAccountClosed if it is closed: the transaction can
// then store a holding for it, and no closure can pass between this check
// and its commit.
func openForHoldings(ctx context.Context, tx pgx.Tx, merchantAccountID string) error {
	if err := lockMerchantAccount(ctx, tx, merchantAccountID, false); err != nil {
		return err
	}
	var closed bool
	err := tx.QueryRow(ctx, `SELECT closed FROM merchant_account_closures WHERE merchant_account_id = $1`, merchantAccountID).Scan(&closed)
	if err == pgx.ErrNoRows {
		return nil
	}
	if err == nil && closed {
		return vaultproxy.ErrMerchantAccountClosed
	}
	return err
}

// CloseMerchantAccount closes a merchant account that holds nothing in the
// vault database, for core-api's deletion attempt attempt: it counts the
// account's holdings as MerchantAccountUsage does and, only when every
// count is zero, records the closure in the same transaction, under the
// lock every insert of a card or config takes. closed reports whether it
// did; usage is the count either way. An attempt already cancelled
// (CancelCloseMerchantAccount: this close arrived after it) closes
// nothing. Closing a closed account closes it again for this attempt.
func (db *DB) CloseMerchantAccount(ctx context.Context, merchantAccountID string, attempt uuid.UUID) (usage map[string]int64, closed bool, err error) {
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var held bool
		if usage, held, err = countHoldingsLocked(ctx, tx, merchantAccountID); err != nil || held {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO merchant_account_closures (merchant_account_id, closed, attempt_id, closed_at)
			SELECT $1, true, $2, clock_timestamp()
			WHERE NOT EXISTS (SELECT 1 FROM merchant_account_cancelled_closures WHERE attempt_id = $2)
			ON CONFLICT (merchant_account_id) DO UPDATE SET closed = true, attempt_id = $2, closed_at = clock_timestamp()`,
			merchantAccountID, attempt)
		closed = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return usage, closed, nil
}

// CancelCloseMerchantAccount undoes attempt's closure of an account whose
// deletion then failed in core-api: the account lives on, with its audit
// trail as it was. Only that attempt's closure is undone, whenever the
// cancellation arrives, and the attempt is remembered as cancelled, so its
// close is refused if it arrives later still.
func (db *DB) CancelCloseMerchantAccount(ctx context.Context, merchantAccountID string, attempt uuid.UUID) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := lockMerchantAccount(ctx, tx, merchantAccountID, true); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO merchant_account_cancelled_closures (attempt_id, merchant_account_id)
			VALUES ($2, $1) ON CONFLICT (attempt_id) DO NOTHING`, merchantAccountID, attempt); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE merchant_account_closures SET closed = false
			WHERE merchant_account_id = $1 AND closed AND attempt_id = $2`, merchantAccountID, attempt)
		return err
	})
}

// ReopenMerchantAccount reopens a deleted account's id for core-api's
// creation of a new account with it: from here on the id's audit trail is
// the new account's (migration 011), whether or not a closure was recorded
// (an id deleted before closures existed, or one whose closure was
// cancelled by mistake, has none). It refuses while the vault holds
// anything under the id (core-api asks only for ids it deleted, so
// anything there is the deleted account's and would pass to the new one):
// usage names it, and nothing changes. The floor is the audit id
// sequence's last value, read without scanning the table: at least every
// id assigned so far. closed reports whether the id is closed after the
// call.
func (db *DB) ReopenMerchantAccount(ctx context.Context, merchantAccountID string) (usage map[string]int64, closed bool, err error) {
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var held bool
		if usage, held, err = countHoldingsLocked(ctx, tx, merchantAccountID); err != nil {
			return err
		}
		if held {
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM merchant_account_closures WHERE merchant_account_id = $1 AND closed)`,
				merchantAccountID).Scan(&closed)
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO merchant_account_closures (merchant_account_id, closed, reopened_at, audit_floor)
			VALUES ($1, false, clock_timestamp(), coalesce(pg_sequence_last_value(pg_get_serial_sequence('audit_events', 'id')), 0))
			ON CONFLICT (merchant_account_id) DO UPDATE SET closed = false, reopened_at = EXCLUDED.reopened_at, audit_floor = EXCLUDED.audit_floor`,
			merchantAccountID)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return usage, closed, nil
}

// countHoldingsLocked takes the account's exclusive lock in tx and counts
// its holdings; held reports whether any count is above zero.
func countHoldingsLocked(ctx context.Context, tx pgx.Tx, merchantAccountID string) (map[string]int64, bool, error) {
	if err := lockMerchantAccount(ctx, tx, merchantAccountID, true); err != nil {
		return nil, false, err
	}
	u, err := merchantUsage(ctx, tx, merchantAccountID)
	return u, err == nil && anyHeld(u), err
}

func anyHeld(usage map[string]int64) bool {
	for _, n := range usage {
		if n > 0 {
			return true
		}
	}
	return false
}
