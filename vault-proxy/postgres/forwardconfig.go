package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forwardconfig"
)

// InsertConfig stores a forwarding config and its hosts (forwardconfig.Store);
// a closed merchant account's is vaultproxy.ErrMerchantAccountClosed, as
// its card is (InsertCardAudited). Authentication methods need no such
// check: they belong to a config.
func (db *DB) InsertConfig(ctx context.Context, c *forwardconfig.Config) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := openForHoldings(ctx, tx, c.MerchantAccountID); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO forward_configs (id, merchant_account_id, display_name) VALUES ($1, $2, $3)
			RETURNING created_at, updated_at`, c.ID, c.MerchantAccountID, c.DisplayName).Scan(&c.CreatedAt, &c.UpdatedAt)
		if err != nil {
			return err
		}
		return insertHosts(ctx, tx, c.ID, c.Hosts)
	})
}

func insertHosts(ctx context.Context, tx pgx.Tx, id uuid.UUID, hosts []string) error {
	_, err := tx.Exec(ctx, `INSERT INTO forward_config_hosts (config_id, position, host)
		SELECT $1, ord, h FROM unnest($2::text[]) WITH ORDINALITY AS t(h, ord)`, id, hosts)
	return err
}

const configColumns = `c.id, c.merchant_account_id, c.display_name, c.created_at, c.updated_at,
	coalesce((SELECT array_agg(h.host ORDER BY h.position) FROM forward_config_hosts h WHERE h.config_id = c.id), '{}')`

func scanConfig(r pgx.Row) (*forwardconfig.Config, error) {
	c := &forwardconfig.Config{}
	err := r.Scan(&c.ID, &c.MerchantAccountID, &c.DisplayName, &c.CreatedAt, &c.UpdatedAt, &c.Hosts)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, vaultproxy.ErrNotFound
	}
	return c, err
}

// ForwardConfigs reads one page of a merchant's configs, oldest first
// (ids are UUIDv7, so id order is creation order): up to
// page.FetchLimit() rows, in the page's query order.
func (db *DB) ForwardConfigs(ctx context.Context, merchantAccountID string, page pagination.Page) ([]*forwardconfig.Config, error) {
	where, order, args := page.KeysetID("c.id", 2, false)
	if where != "" {
		where = " AND " + where
	}
	rows, err := db.Pool.Query(ctx, `SELECT `+configColumns+` FROM forward_configs c
		WHERE c.merchant_account_id = $1`+where+` ORDER BY `+order+` LIMIT `+strconv.Itoa(page.FetchLimit()),
		append([]any{merchantAccountID}, args...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*forwardconfig.Config, error) { return scanConfig(r) })
}

// ForwardConfig returns one of the merchant's configs.
func (db *DB) ForwardConfig(ctx context.Context, merchantAccountID string, id uuid.UUID) (*forwardconfig.Config, error) {
	return scanConfig(db.Pool.QueryRow(ctx, `SELECT `+configColumns+` FROM forward_configs c
		WHERE c.merchant_account_id = $1 AND c.id = $2`, merchantAccountID, id))
}

// UpdateConfig changes one of the merchant's configs: change edits it as
// read under its row lock, and its display name and hosts are written in
// the same transaction, so two partial updates crossing each other cannot
// write back what the other changed. An error of change is returned as it
// is, and nothing is written.
func (db *DB) UpdateConfig(ctx context.Context, merchantAccountID string, id uuid.UUID, change func(*forwardconfig.Config) error) (*forwardconfig.Config, error) {
	var c *forwardconfig.Config
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		// The lock first, then the read in a statement of its own: a
		// statement that waited for the lock re-reads the config's row but
		// not its hosts, which it would see as they were before the update
		// it waited for.
		tag, err := tx.Exec(ctx, `SELECT 1 FROM forward_configs WHERE merchant_account_id = $1 AND id = $2 FOR UPDATE`, merchantAccountID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return vaultproxy.ErrNotFound
		}
		if c, err = scanConfig(tx.QueryRow(ctx, `SELECT `+configColumns+` FROM forward_configs c WHERE c.id = $1`, id)); err != nil {
			return err
		}
		if err := change(c); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE forward_configs SET display_name = $2, updated_at = now()
			WHERE id = $1 RETURNING updated_at`, c.ID, c.DisplayName).Scan(&c.UpdatedAt); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM forward_config_hosts WHERE config_id = $1`, c.ID); err != nil {
			return err
		}
		return insertHosts(ctx, tx, c.ID, c.Hosts)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DeleteConfig removes a config, its hosts and its methods.
func (db *DB) DeleteConfig(ctx context.Context, merchantAccountID string, id uuid.UUID) ([]envelope.Sealed, error) {
	var sealed []envelope.Sealed
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM forward_auth_methods WHERE merchant_account_id = $1 AND config_id = $2
			RETURNING data_key_id, wrapped_record_key, ciphertext`, merchantAccountID, id)
		if err != nil {
			return err
		}
		sealed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (envelope.Sealed, error) {
			var s envelope.Sealed
			return s, r.Scan(&s.DataKeyID, &s.WrappedKey, &s.Ciphertext)
		})
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM forward_configs WHERE merchant_account_id = $1 AND id = $2`, merchantAccountID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return vaultproxy.ErrNotFound
		}
		return nil
	})
	return sealed, err
}

// ForwardHosts returns every host the merchant's configs list.
func (db *DB) ForwardHosts(ctx context.Context, merchantAccountID string) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT h.host FROM forward_config_hosts h
		JOIN forward_configs c ON c.id = h.config_id WHERE c.merchant_account_id = $1`, merchantAccountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// InsertAuthMethod stores a sealed authentication method on its config,
// refusing more than maxPerConfig methods per config. The config row is
// locked so concurrent inserts cannot pass the limit together.
func (db *DB) InsertAuthMethod(ctx context.Context, m *forwardconfig.AuthMethod, maxPerConfig int) error {
	public, err := json.Marshal(m.PublicFields)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var n int
		err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM forward_auth_methods WHERE config_id = c.id)
			FROM forward_configs c WHERE c.merchant_account_id = $1 AND c.id = $2 FOR UPDATE`, m.MerchantAccountID, m.ConfigID).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return vaultproxy.ErrNotFound
		}
		if err != nil {
			return err
		}
		if n >= maxPerConfig {
			return forwardconfig.ErrTooMany
		}
		return tx.QueryRow(ctx, `INSERT INTO forward_auth_methods (id, config_id, merchant_account_id, kind, display_name,
				field_keys, public_fields, data_key_id, wrapped_record_key, ciphertext)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING created_at`,
			m.ID, m.ConfigID, m.MerchantAccountID, m.Kind, m.DisplayName, m.FieldKeys, public,
			m.Sealed.DataKeyID, m.Sealed.WrappedKey, m.Sealed.Ciphertext).Scan(&m.CreatedAt)
	})
}

const methodColumns = `m.id, m.config_id, m.merchant_account_id, m.kind, m.display_name, m.field_keys, m.public_fields,
	m.data_key_id, m.wrapped_record_key, m.ciphertext, m.created_at`

func scanMethod(r pgx.Row, extra ...any) (*forwardconfig.AuthMethod, error) {
	m := &forwardconfig.AuthMethod{}
	var public []byte
	dst := append([]any{&m.ID, &m.ConfigID, &m.MerchantAccountID, &m.Kind, &m.DisplayName, &m.FieldKeys, &public,
		&m.Sealed.DataKeyID, &m.Sealed.WrappedKey, &m.Sealed.Ciphertext, &m.CreatedAt}, extra...)
	if err := r.Scan(dst...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(public, &m.PublicFields); err != nil {
		return nil, err
	}
	return m, nil
}

// AuthMethods lists a config's methods, oldest first.
func (db *DB) AuthMethods(ctx context.Context, merchantAccountID string, configID uuid.UUID) ([]*forwardconfig.AuthMethod, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+methodColumns+` FROM forward_auth_methods m
		WHERE m.merchant_account_id = $1 AND m.config_id = $2 ORDER BY m.created_at, m.id`, merchantAccountID, configID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*forwardconfig.AuthMethod, error) { return scanMethod(r) })
}

// AuthMethodsByID returns the merchant's methods for ids, in the order
// asked, with the hosts of each method's config. An id that is missing or
// another merchant's is ErrNotFound.
func (db *DB) AuthMethodsByID(ctx context.Context, merchantAccountID string, ids []uuid.UUID) ([]*forwardconfig.AuthMethod, [][]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+methodColumns+`,
			coalesce((SELECT array_agg(h.host ORDER BY h.position) FROM forward_config_hosts h WHERE h.config_id = m.config_id), '{}')
		FROM forward_auth_methods m WHERE m.merchant_account_id = $1 AND m.id = ANY($2)`, merchantAccountID, ids)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	type found struct {
		m     *forwardconfig.AuthMethod
		hosts []string
	}
	byID := map[uuid.UUID]found{}
	for rows.Next() {
		var hosts []string
		m, err := scanMethod(rows, &hosts)
		if err != nil {
			return nil, nil, err
		}
		byID[m.ID] = found{m, hosts}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	methods := make([]*forwardconfig.AuthMethod, len(ids))
	hosts := make([][]string, len(ids))
	for i, id := range ids {
		f, ok := byID[id]
		if !ok {
			return nil, nil, fmt.Errorf("%w: authentication method %d", vaultproxy.ErrNotFound, i+1)
		}
		methods[i], hosts[i] = f.m, f.hosts
	}
	return methods, hosts, nil
}

// DeleteAuthMethod removes one method of the merchant's config.
func (db *DB) DeleteAuthMethod(ctx context.Context, merchantAccountID string, configID, id uuid.UUID) (envelope.Sealed, error) {
	var s envelope.Sealed
	err := db.Pool.QueryRow(ctx, `DELETE FROM forward_auth_methods WHERE merchant_account_id = $1 AND config_id = $2 AND id = $3
		RETURNING data_key_id, wrapped_record_key, ciphertext`, merchantAccountID, configID, id).Scan(&s.DataKeyID, &s.WrappedKey, &s.Ciphertext)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, vaultproxy.ErrNotFound
	}
	return s, err
}
