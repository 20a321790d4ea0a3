package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/threeds"
	"github.com/payorch/shared/pagination"
)

// ThreeDSStore is the core database as the 3-D Secure scenarios'
// store.
type ThreeDSStore struct{ *DB }

var _ threeds.Store = ThreeDSStore{}

// InTx is DB.InTx, its transaction a threeds.Tx.
func (s ThreeDSStore) InTx(ctx context.Context, fn func(threeds.Tx) error) error {
	return s.DB.InTx(ctx, func(tx *Tx) error { return fn(tx) })
}

const scenarioColumns = `s.id::text, s.merchant_account_id, s.priority, s.first_name, s.last_name, s.email_address, s.amount,
	s.external_identifier, s.card_condition_id::text, s.card_condition_bin, s.card_condition_last4, s.bin, s.version, s.authentication_status, coalesce(s.result_status, ''),
	s.created_at, s.updated_at`

func scanScenario(row pgx.Row) (*coreapi.ThreeDSScenario, error) {
	var s coreapi.ThreeDSScenario
	var card struct{ id, bin, last4 *string }
	c, o := &s.Conditions, &s.Outcome
	err := row.Scan(&s.ID, &s.MerchantAccountID, &s.Priority, &c.FirstName, &c.LastName, &c.EmailAddress, &c.Amount,
		&c.ExternalIdentifier, &card.id, &card.bin, &card.last4, &c.BIN, &o.Version, &o.AuthenticationStatus, &o.ResultStatus,
		&s.CreatedAt, &s.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("3-D Secure scenario: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if card.id != nil {
		c.CardCondition = &coreapi.ThreeDSCardCondition{ID: *card.id, BIN: deref(card.bin), Last4: deref(card.last4)}
	}
	return &s, nil
}

// cardCondition is c's card condition as its three columns.
func cardCondition(c coreapi.ThreeDSConditions) (id, bin, last4 *string) {
	if cc := c.CardCondition; cc != nil {
		return &cc.ID, &cc.BIN, &cc.Last4
	}
	return nil, nil, nil
}

// cardConditionTaken is a card condition's reference another scenario
// holds already.
func cardConditionTaken(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == uniqueViolation && pe.ConstraintName == "three_ds_scenarios_card_condition_id_key" {
		return coreapi.Problems{{Pointer: "/conditions/card_condition/id", Message: "another scenario holds this card condition", Type: "value_error.card_condition"}}.Err()
	}
	return err
}

func collectScenarios(rows pgx.Rows, err error) ([]coreapi.ThreeDSScenario, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.ThreeDSScenario, error) {
		s, err := scanScenario(r)
		if err != nil {
			return coreapi.ThreeDSScenario{}, err
		}
		return *s, nil
	})
}

// Scenario reads 3-D Secure scenario id of merchant account m.
func (db *DB) Scenario(ctx context.Context, m, id string) (*coreapi.ThreeDSScenario, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("3-D Secure scenario: %w", coreapi.ErrNotFound)
	}
	return scanScenario(db.Pool.QueryRow(ctx, `SELECT `+scenarioColumns+` FROM three_ds_scenarios s
		WHERE s.merchant_account_id = $1 AND s.id = $2`, m, id))
}

// ListScenarios returns up to page.FetchLimit() scenarios of merchant
// account m in the page's query order, by priority.
func (db *DB) ListScenarios(ctx context.Context, m string, page pagination.Page) ([]coreapi.ThreeDSScenario, error) {
	sql := `SELECT ` + scenarioColumns + ` FROM three_ds_scenarios s WHERE s.merchant_account_id = $1`
	args := []any{m}
	where, order, kargs := page.KeysetID("s.priority", 2, false)
	if where != "" {
		// The cursor's key is the boundary's priority, as text.
		at, err := strconv.Atoi(kargs[0].(string))
		if err != nil {
			return nil, fmt.Errorf("3-D Secure scenarios cursor: %w", err)
		}
		sql += " AND " + where
		args = append(args, at)
	}
	return collectScenarios(db.Pool.Query(ctx, sql+" ORDER BY "+order+" LIMIT "+strconv.Itoa(page.FetchLimit()), args...))
}

// Scenarios returns every scenario of merchant account m in evaluation
// order.
func (db *DB) Scenarios(ctx context.Context, m string) ([]coreapi.ThreeDSScenario, error) {
	return collectScenarios(db.Pool.Query(ctx, `SELECT `+scenarioColumns+` FROM three_ds_scenarios s
		WHERE s.merchant_account_id = $1 ORDER BY s.priority`, m))
}

// LockScenarios takes merchant account m's scenario lock (a
// transaction-scoped advisory lock: the order of its rules changes one
// request at a time) and counts its scenarios.
func (tx *Tx) LockScenarios(ctx context.Context, m string) (int, error) {
	if _, err := tx.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('three_ds_scenarios:' || $1, 0))`, m); err != nil {
		return 0, err
	}
	var n int
	err := tx.tx.QueryRow(ctx, `SELECT count(*) FROM three_ds_scenarios WHERE merchant_account_id = $1`, m).Scan(&n)
	return n, err
}

// LockScenario reads scenario id of merchant account m, its row locked.
func (tx *Tx) LockScenario(ctx context.Context, m, id string) (*coreapi.ThreeDSScenario, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("3-D Secure scenario: %w", coreapi.ErrNotFound)
	}
	return scanScenario(tx.tx.QueryRow(ctx, `SELECT `+scenarioColumns+` FROM three_ds_scenarios s
		WHERE s.merchant_account_id = $1 AND s.id = $2 FOR UPDATE`, m, id))
}

// InsertScenario stores s at s.Priority, those at or after it one place
// down.
func (tx *Tx) InsertScenario(ctx context.Context, s *coreapi.ThreeDSScenario) error {
	if _, err := tx.tx.Exec(ctx, `UPDATE three_ds_scenarios SET priority = priority + 1
		WHERE merchant_account_id = $1 AND priority >= $2`, s.MerchantAccountID, s.Priority); err != nil {
		return err
	}
	c, o := s.Conditions, s.Outcome
	id, bin, last4 := cardCondition(c)
	err := tx.tx.QueryRow(ctx, `INSERT INTO three_ds_scenarios (id, merchant_account_id, priority, first_name, last_name,
			email_address, amount, external_identifier, card_condition_id, card_condition_bin, card_condition_last4, bin,
			version, authentication_status, result_status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::uuid, $10, $11, $12, $13, $14, nullif($15, '')) RETURNING created_at, updated_at`,
		s.ID, s.MerchantAccountID, s.Priority, c.FirstName, c.LastName, c.EmailAddress, c.Amount, c.ExternalIdentifier,
		id, bin, last4, c.BIN, o.Version, o.AuthenticationStatus, o.ResultStatus).Scan(&s.CreatedAt, &s.UpdatedAt)
	if merchantAccountGone(err) {
		return coreapi.ErrMerchantAccountNotFound
	}
	return cardConditionTaken(err)
}

// UpdateScenario writes s's conditions, outcome and priority.
func (tx *Tx) UpdateScenario(ctx context.Context, s *coreapi.ThreeDSScenario) error {
	c, o := s.Conditions, s.Outcome
	id, bin, last4 := cardCondition(c)
	err := tx.tx.QueryRow(ctx, `UPDATE three_ds_scenarios SET first_name = $3, last_name = $4, email_address = $5,
			amount = $6, external_identifier = $7, card_condition_id = $8::uuid, card_condition_bin = $9,
			card_condition_last4 = $10, bin = $11, version = $12,
			authentication_status = $13, result_status = nullif($14, ''), priority = $15, updated_at = now()
		WHERE merchant_account_id = $1 AND id = $2 RETURNING updated_at`,
		s.MerchantAccountID, s.ID, c.FirstName, c.LastName, c.EmailAddress, c.Amount, c.ExternalIdentifier,
		id, bin, last4, c.BIN, o.Version, o.AuthenticationStatus, o.ResultStatus, s.Priority).Scan(&s.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("3-D Secure scenario: %w", coreapi.ErrNotFound)
	}
	return cardConditionTaken(err)
}

// MoveScenario moves scenario id from priority from to priority to,
// those between one place towards from. The unique constraint on
// (account, priority) is checked at commit, so the rows may pass through
// each other's places meanwhile.
func (tx *Tx) MoveScenario(ctx context.Context, m, id string, from, to int) error {
	if from == to {
		return nil
	}
	shift := `UPDATE three_ds_scenarios SET priority = priority + 1, updated_at = now()
		WHERE merchant_account_id = $1 AND priority >= $2 AND priority < $3`
	lo, hi := to, from
	if to > from {
		shift = `UPDATE three_ds_scenarios SET priority = priority - 1, updated_at = now()
			WHERE merchant_account_id = $1 AND priority > $2 AND priority <= $3`
		lo, hi = from, to
	}
	if _, err := tx.tx.Exec(ctx, shift, m, lo, hi); err != nil {
		return err
	}
	_, err := tx.tx.Exec(ctx, `UPDATE three_ds_scenarios SET priority = $3, updated_at = now()
		WHERE merchant_account_id = $1 AND id = $2`, m, id, to)
	return err
}

// DeleteScenario removes scenario id at priority at; those after it move
// up one place.
func (tx *Tx) DeleteScenario(ctx context.Context, m, id string, at int) error {
	tag, err := tx.tx.Exec(ctx, `DELETE FROM three_ds_scenarios WHERE merchant_account_id = $1 AND id = $2`, m, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("3-D Secure scenario: %w", coreapi.ErrNotFound)
	}
	_, err = tx.tx.Exec(ctx, `UPDATE three_ds_scenarios SET priority = priority - 1
		WHERE merchant_account_id = $1 AND priority > $2`, m, at)
	return err
}
