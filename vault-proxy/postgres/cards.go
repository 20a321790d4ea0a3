package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	vaultproxy "github.com/payorch/vault-proxy"
)

// SaveDataKey stores a wrapped data key (envelope.KeyStore).
func (db *DB) SaveDataKey(ctx context.Context, id uuid.UUID, wrapped string) error {
	v, err := TransitVersion(wrapped)
	if err != nil {
		return err
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO data_keys (id, wrapped, key_version) VALUES ($1, $2, $3)`, id, wrapped, v)
	return err
}

// DeleteDataKey removes a data key no record uses (envelope.KeyDeleter):
// one stored that then could not be unwrapped. The foreign keys of the
// record tables refuse the delete of a key in use.
func (db *DB) DeleteDataKey(ctx context.Context, id uuid.UUID) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM data_keys WHERE id = $1`, id)
	return err
}

// LoadDataKey returns a wrapped data key (envelope.KeyStore).
func (db *DB) LoadDataKey(ctx context.Context, id uuid.UUID) (string, error) {
	var w string
	err := db.Pool.QueryRow(ctx, `SELECT wrapped FROM data_keys WHERE id = $1`, id).Scan(&w)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", vaultproxy.ErrNotFound
	}
	return w, err
}

// TransitVersion reads N from a transit ciphertext "vault:vN:...".
func TransitVersion(wrapped string) (int, error) {
	rest, ok := strings.CutPrefix(wrapped, "vault:v")
	if !ok {
		return 0, fmt.Errorf("postgres: not a transit ciphertext")
	}
	num, _, ok := strings.Cut(rest, ":")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 1 {
		return 0, fmt.Errorf("postgres: not a transit ciphertext")
	}
	return v, nil
}

// Cards returns the merchant's cards for tokens, in the order asked. A token
// that is missing or belongs to another merchant account is ErrNotFound.
func (db *DB) Cards(ctx context.Context, merchantAccountID string, tokens []uuid.UUID) ([]*vaultproxy.VaultedCard, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT id, kind, data_key_id, wrapped_record_key, ciphertext, fingerprint, scheme, card_type, bin, last4,
		       coalesce(expiration_date, ''), created_at, updated_at
		FROM vaulted_cards WHERE merchant_account_id = $1 AND id = ANY($2)`, merchantAccountID, uuidArray(tokens))
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*vaultproxy.VaultedCard, len(tokens))
	for rows.Next() {
		c := &vaultproxy.VaultedCard{MerchantAccountID: merchantAccountID}
		var kind string
		if err := rows.Scan(&c.Token, &kind, &c.Sealed.DataKeyID, &c.Sealed.WrappedKey, &c.Sealed.Ciphertext,
			&c.Fingerprint, &c.Scheme, &c.CardType, &c.BIN, &c.Last4, &c.ExpirationDate, &c.CreatedAt, &c.UpdatedAt); err != nil {
			rows.Close()
			return nil, err
		}
		c.Kind = vaultproxy.Kind(kind)
		byID[c.Token] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*vaultproxy.VaultedCard, len(tokens))
	for i, t := range tokens {
		c, ok := byID[t]
		if !ok {
			return nil, fmt.Errorf("%w: token %d", vaultproxy.ErrNotFound, i+1)
		}
		out[i] = c
	}
	return out, nil
}

// VaultedRecords returns one page of vaulted records (cards, gift cards,
// bank accounts), in token order, for the reconciliation: the primary key
// is the keyset, so a page never skips or repeats a record that exists
// throughout, whatever is inserted or deleted meanwhile. The age is by the
// database's clock, as DeleteCardOlderThan checks it.
func (db *DB) VaultedRecords(ctx context.Context, q vaultproxy.RecordQuery) ([]vaultproxy.RecordRef, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT id, merchant_account_id, kind, created_at FROM vaulted_cards
		WHERE id > $1 AND created_at < $2 AND created_at <= clock_timestamp() - $3::interval AND ($4 = '' OR merchant_account_id = $4)
		ORDER BY id LIMIT $5`, q.After, q.CreatedBefore, q.MinAge, q.MerchantAccountID, q.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (vaultproxy.RecordRef, error) {
		var rec vaultproxy.RecordRef
		var kind string
		err := r.Scan(&rec.Token, &rec.MerchantAccountID, &kind, &rec.CreatedAt)
		rec.Kind = vaultproxy.Kind(kind)
		return rec, err
	})
}

// UpdateExpiry changes a card's expiry (PUT /payment-methods/{id}).
func (db *DB) UpdateExpiry(ctx context.Context, merchantAccountID string, token uuid.UUID, expiry string) error {
	tag, err := db.Pool.Exec(ctx, `UPDATE vaulted_cards SET expiration_date = $3, updated_at = now()
		WHERE merchant_account_id = $1 AND id = $2`, merchantAccountID, token, expiry)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return vaultproxy.ErrNotFound
	}
	return nil
}

// DeleteCard removes a card and, with it, its record key and the rows of
// its deleted network tokens. While the card has a network token that is
// not deleted it refuses with vaultproxy.ErrLiveNetworkToken, and keeps all:
// a live token's row is the only record of it (migration 010 makes the
// database refuse too).
//
// The card row is locked first. FOR UPDATE conflicts with the KEY SHARE
// lock an insert's foreign key check takes on it, so a token inserted
// concurrently either holds that lock first, and is committed (and seen by
// the check below, a statement of its own so that its snapshot is taken
// after the wait) before the lock is granted, or waits for this
// transaction and fails its check once the card is gone
// (InsertNetworkToken: vaultproxy.ErrNotFound).
func (db *DB) DeleteCard(ctx context.Context, merchantAccountID string, token uuid.UUID) error {
	return db.deleteCard(ctx, merchantAccountID, token, 0)
}

// DeleteCardOlderThan is DeleteCard for a card vaulted at least minAge
// ago, or vaultproxy.ErrTooRecent. The age is by the database's clock:
// created_at is its time at the insert, so no instance's clock can make a
// card look older than it is. It is read under the row's lock, in the
// transaction that deletes it, against clock_timestamp() (the time of the
// check, where now() would be the transaction's start, which an insert
// committed since may postdate).
func (db *DB) DeleteCardOlderThan(ctx context.Context, merchantAccountID string, token uuid.UUID, minAge time.Duration) error {
	return db.deleteCard(ctx, merchantAccountID, token, minAge)
}

func (db *DB) deleteCard(ctx context.Context, merchantAccountID string, token uuid.UUID, minAge time.Duration) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var old bool
		err := tx.QueryRow(ctx, `SELECT created_at <= clock_timestamp() - $3::interval FROM vaulted_cards
			WHERE merchant_account_id = $1 AND id = $2 FOR UPDATE`, merchantAccountID, token, minAge).Scan(&old)
		if errors.Is(err, pgx.ErrNoRows) {
			return vaultproxy.ErrNotFound
		}
		if err != nil {
			return err
		}
		if !old {
			return vaultproxy.ErrTooRecent
		}
		var live bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM network_tokens WHERE payment_method_id = $1 AND status <> 'deleted')`,
			token).Scan(&live); err != nil {
			return err
		}
		if live {
			return vaultproxy.ErrLiveNetworkToken
		}
		if _, err := tx.Exec(ctx, `DELETE FROM network_tokens WHERE payment_method_id = $1 AND status = 'deleted'`, token); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM vaulted_cards WHERE id = $1`, token)
		return err
	})
}

// DataKeysToRewrap returns up to limit data keys wrapped below version.
func (db *DB) DataKeysToRewrap(ctx context.Context, version, limit int) (ids []uuid.UUID, wrapped []string, err error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, wrapped FROM data_keys WHERE key_version < $1 ORDER BY id LIMIT $2`, version, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var w string
		if err := rows.Scan(&id, &w); err != nil {
			return nil, nil, err
		}
		ids, wrapped = append(ids, id), append(wrapped, w)
	}
	return ids, wrapped, rows.Err()
}

// ReplaceWrapped stores rewrapped data keys in one transaction.
func (db *DB) ReplaceWrapped(ctx context.Context, ids []uuid.UUID, wrapped []string) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		for i, id := range ids {
			v, err := TransitVersion(wrapped[i])
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE data_keys SET wrapped = $2, key_version = $3, rewrapped_at = now() WHERE id = $1`, id, wrapped[i], v); err != nil {
				return err
			}
		}
		return nil
	})
}

// VersionCount is how many data keys and records one transit version covers.
type VersionCount struct {
	Version  int
	DataKeys int64
	Records  int64
}

// KeyVersions counts data keys and the records they protect (vaulted cards,
// sealed forwarding credentials and network tokens) per transit key version.
func (db *DB) KeyVersions(ctx context.Context) ([]VersionCount, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT k.key_version, count(DISTINCT k.id), count(r.data_key_id)
		FROM data_keys k LEFT JOIN (
			SELECT data_key_id FROM vaulted_cards
			UNION ALL SELECT data_key_id FROM forward_auth_methods
			UNION ALL SELECT data_key_id FROM network_tokens WHERE data_key_id IS NOT NULL
		) r ON r.data_key_id = k.id
		GROUP BY k.key_version ORDER BY k.key_version`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (VersionCount, error) {
		var v VersionCount
		err := r.Scan(&v.Version, &v.DataKeys, &v.Records)
		return v, err
	})
}
