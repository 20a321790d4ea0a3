package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/dashboard"
)

var _ dashboard.Store = (*DB)(nil)

const dashboardUserColumns = `id::text, email, password_hash, role, merchant_account_ids, failed_sign_ins,
	locked_until, must_change_password, created_at`

func scanDashboardUser(row pgx.Row) (*coreapi.DashboardUser, error) {
	var u coreapi.DashboardUser
	var role string
	var locked *time.Time
	err := row.Scan(&u.ID, &u.Email, &u.PasswordHash, &role, &u.MerchantAccountIDs, &u.FailedSignIns, &locked, &u.MustChangePassword, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("dashboard user: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	u.Role = coreapi.DashboardRole(role)
	if locked != nil {
		u.LockedUntil = *locked
	}
	return &u, nil
}

// CreateDashboardUser stores a new user; an email already taken is a
// DuplicateError.
func (db *DB) CreateDashboardUser(ctx context.Context, u *coreapi.DashboardUser) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO dashboard_users (id, email, password_hash, role, merchant_account_ids, must_change_password, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, u.ID, u.Email, u.PasswordHash, string(u.Role), u.MerchantAccountIDs, u.MustChangePassword, u.CreatedAt)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == uniqueViolation {
		return &coreapi.DuplicateError{Resource: "dashboard user", Field: "email"}
	}
	return err
}

// DashboardUserByEmail reads the user of a (lower-case) email.
func (db *DB) DashboardUserByEmail(ctx context.Context, email string) (*coreapi.DashboardUser, error) {
	return scanDashboardUser(db.Pool.QueryRow(ctx, `SELECT `+dashboardUserColumns+` FROM dashboard_users WHERE email = $1`, email))
}

// DashboardUser reads a user by id.
func (db *DB) DashboardUser(ctx context.Context, id string) (*coreapi.DashboardUser, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("dashboard user: %w", coreapi.ErrNotFound)
	}
	return scanDashboardUser(db.Pool.QueryRow(ctx, `SELECT `+dashboardUserColumns+` FROM dashboard_users WHERE id = $1`, id))
}

// RecordFailedSignIn counts a failure in one statement, so concurrent
// guesses each count: the row lock serializes them.
func (db *DB) RecordFailedSignIn(ctx context.Context, id string, maxFailures int, lockUntil time.Time) (*coreapi.DashboardUser, error) {
	return scanDashboardUser(db.Pool.QueryRow(ctx, `UPDATE dashboard_users SET
			locked_until    = CASE WHEN failed_sign_ins + 1 >= $2 THEN $3 ELSE locked_until END,
			failed_sign_ins = CASE WHEN failed_sign_ins + 1 >= $2 THEN 0 ELSE failed_sign_ins + 1 END,
			updated_at = now()
		WHERE id = $1 RETURNING `+dashboardUserColumns, id, maxFailures, lockUntil))
}

// ResetFailedSignIns clears the failures after a successful sign-in.
func (db *DB) ResetFailedSignIns(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE dashboard_users SET failed_sign_ins = 0, updated_at = now() WHERE id = $1`, id)
	return err
}

// CreateDashboardSession stores a session, and drops the expired and the
// idle ones (sign-ins are rare enough to carry that cleanup).
func (db *DB) CreateDashboardSession(ctx context.Context, s *coreapi.DashboardSession, idleSince time.Time) error {
	return db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.tx.Exec(ctx, `DELETE FROM dashboard_sessions WHERE expires_at < $1 OR last_seen_at < $2`,
			s.CreatedAt, idleSince); err != nil {
			return err
		}
		_, err := tx.tx.Exec(ctx, `INSERT INTO dashboard_sessions (token_hash, user_id, csrf_token, created_at, expires_at, last_seen_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, s.TokenHash, s.UserID, s.CSRFToken, s.CreatedAt, s.ExpiresAt, s.LastSeenAt)
		return err
	})
}

// DashboardSession reads a session that has not expired by now and was
// last seen after idleSince.
func (db *DB) DashboardSession(ctx context.Context, tokenHash []byte, now, idleSince time.Time) (*coreapi.DashboardSession, error) {
	s := coreapi.DashboardSession{TokenHash: tokenHash}
	err := db.Pool.QueryRow(ctx, `SELECT user_id::text, csrf_token, created_at, expires_at, last_seen_at FROM dashboard_sessions
		WHERE token_hash = $1 AND expires_at > $2 AND last_seen_at > $3`, tokenHash, now, idleSince).
		Scan(&s.UserID, &s.CSRFToken, &s.CreatedAt, &s.ExpiresAt, &s.LastSeenAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("dashboard session: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteDashboardSession ends a session.
func (db *DB) DeleteDashboardSession(ctx context.Context, tokenHash []byte) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM dashboard_sessions WHERE token_hash = $1`, tokenHash)
	return err
}

// TouchDashboardSession records a use of the session. Never backwards:
// of two racing uses, the later time stays.
func (db *DB) TouchDashboardSession(ctx context.Context, tokenHash []byte, now time.Time) error {
	_, err := db.Pool.Exec(ctx, `UPDATE dashboard_sessions SET last_seen_at = $2 WHERE token_hash = $1 AND last_seen_at < $2`,
		tokenHash, now)
	return err
}

// SetDashboardPassword replaces a user's password and ends the user's
// other sessions, in one transaction.
func (db *DB) SetDashboardPassword(ctx context.Context, userID, hash string, mustChange bool, keep []byte) error {
	return db.InTx(ctx, func(tx *Tx) error { return setDashboardPassword(ctx, tx.tx, userID, hash, mustChange, keep) })
}

// setDashboardPassword writes a password, clears failures and lockout,
// and ends every session of the user but keep (nil: all of them).
func setDashboardPassword(ctx context.Context, tx *txConn, userID, hash string, mustChange bool, keep []byte) error {
	tag, err := tx.Exec(ctx, `UPDATE dashboard_users SET password_hash = $2, must_change_password = $3, failed_sign_ins = 0,
		locked_until = NULL, updated_at = now() WHERE id = $1`, userID, hash, mustChange)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("dashboard user: %w", coreapi.ErrNotFound)
	}
	_, err = tx.Exec(ctx, `DELETE FROM dashboard_sessions WHERE user_id = $1 AND token_hash IS DISTINCT FROM $2`, userID, keep)
	return err
}

// DashboardUsers lists every user by email.
func (db *DB) DashboardUsers(ctx context.Context) ([]*coreapi.DashboardUser, error) {
	return dashboardUsers(ctx, db.Pool, `SELECT `+dashboardUserColumns+` FROM dashboard_users ORDER BY email`)
}

func dashboardUsers(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string) ([]*coreapi.DashboardUser, error) {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var users []*coreapi.DashboardUser
	for rows.Next() {
		u, err := scanDashboardUser(rows)
		if err != nil {
			return nil, err
		}
		users = append(users, u)
	}
	return users, rows.Err()
}

// dashboardTeamLock serializes the edits of the team (an advisory lock:
// sign-ins, which write the same rows, need not wait for it).
const dashboardTeamLock = `SELECT pg_advisory_xact_lock(hashtextextended('dashboard_users.team', 0))`

// EditDashboardTeam runs edit over every user under the team's lock and
// stores its change.
func (db *DB) EditDashboardTeam(ctx context.Context, edit func([]*coreapi.DashboardUser) (dashboard.TeamEdit, error)) error {
	return db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.tx.Exec(ctx, dashboardTeamLock); err != nil {
			return err
		}
		users, err := dashboardUsers(ctx, tx.tx, `SELECT `+dashboardUserColumns+` FROM dashboard_users ORDER BY email`)
		if err != nil {
			return err
		}
		e, err := edit(users)
		if err != nil {
			return err
		}
		switch {
		case e.Update != nil:
			_, err = tx.tx.Exec(ctx, `UPDATE dashboard_users SET role = $2, merchant_account_ids = $3, updated_at = now() WHERE id = $1`,
				e.Update.ID, string(e.Update.Role), e.Update.MerchantAccountIDs)
		case e.DeleteID != "":
			_, err = tx.tx.Exec(ctx, `DELETE FROM dashboard_users WHERE id = $1`, e.DeleteID)
		case e.Reset != nil:
			err = setDashboardPassword(ctx, tx.tx, e.Reset.UserID, e.Reset.Hash, true, nil)
		}
		return err
	})
}

// UnlockDashboardUser lifts a lockout.
func (db *DB) UnlockDashboardUser(ctx context.Context, id string) (*coreapi.DashboardUser, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("dashboard user: %w", coreapi.ErrNotFound)
	}
	return scanDashboardUser(db.Pool.QueryRow(ctx, `UPDATE dashboard_users SET failed_sign_ins = 0, locked_until = NULL,
		updated_at = now() WHERE id = $1 RETURNING `+dashboardUserColumns, id))
}
