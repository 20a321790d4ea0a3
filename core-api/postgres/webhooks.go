package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/pagination"
)

var (
	_ webhooks.Store         = (*DB)(nil)
	_ webhooks.DeliveryStore = (*DB)(nil)
)

// subColumns is what scanSubscription reads; never a ciphertext.
const subColumns = `s.id::text, s.merchant_account_id, s.url, s.active, s.event_names, s.basic_auth_username,
	s.disabled_reason, CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret_expires_at END,
	s.created_at, s.updated_at`

func scanSubscription(row pgx.Row) (*coreapi.WebhookSubscription, error) {
	var s coreapi.WebhookSubscription
	err := row.Scan(&s.ID, &s.MerchantAccountID, &s.URL, &s.Active, &s.EventNames, &s.BasicAuthUsername,
		&s.DisabledReason, &s.SecretRotationEndsAt, &s.CreatedAt, &s.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("webhook subscription: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func notFoundSubscription() error { return fmt.Errorf("webhook subscription: %w", coreapi.ErrNotFound) }

// InsertWebhookSubscription stores s (its id set) and sets its times.
func (db *DB) InsertWebhookSubscription(ctx context.Context, s *coreapi.WebhookSubscription, sealed webhooks.Sealed) error {
	err := db.Pool.QueryRow(ctx, `INSERT INTO webhook_subscriptions (id, merchant_account_id, url, active, event_names,
			secret_ciphertext, basic_auth_ciphertext, basic_auth_username)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at, updated_at`,
		s.ID, s.MerchantAccountID, s.URL, s.Active, s.EventNames, sealed.Secret, sealed.BasicAuth, s.BasicAuthUsername,
	).Scan(&s.CreatedAt, &s.UpdatedAt)
	if merchantAccountGone(err) {
		return coreapi.ErrMerchantAccountNotFound
	}
	return err
}

// WebhookSubscription reads subscription id of merchant account m.
func (db *DB) WebhookSubscription(ctx context.Context, m, id string) (*coreapi.WebhookSubscription, error) {
	if !coreapi.IsUUID(id) {
		return nil, notFoundSubscription()
	}
	return scanSubscription(db.Pool.QueryRow(ctx, `SELECT `+subColumns+` FROM webhook_subscriptions s
		WHERE s.merchant_account_id = $1 AND s.id = $2`, m, id))
}

// ListWebhookSubscriptions returns up to page.FetchLimit() subscriptions
// of merchant account m, in the page's query order.
func (db *DB) ListWebhookSubscriptions(ctx context.Context, m string, page pagination.Page) ([]coreapi.WebhookSubscription, error) {
	sql, args := keysetPage(`SELECT `+subColumns+` FROM webhook_subscriptions s WHERE s.merchant_account_id = $1`,
		[]any{m}, "s", page)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.WebhookSubscription, error) {
		s, err := scanSubscription(r)
		if err != nil {
			return coreapi.WebhookSubscription{}, err
		}
		return *s, nil
	})
}

// UpdateWebhookSubscription writes the fields f sets, in one statement.
// New credentials bump the secret version, so dispatchers decrypt again.
// Turning a subscription back on clears why it was disabled.
func (db *DB) UpdateWebhookSubscription(ctx context.Context, m, id string, f coreapi.WebhookSubscriptionFields, basicAuth *string) (*coreapi.WebhookSubscription, error) {
	if !coreapi.IsUUID(id) {
		return nil, notFoundSubscription()
	}
	var username *string
	if b := f.BasicAuth.Ptr(); b != nil && *b != nil {
		username = &(*b).Username
	}
	var names []string
	if p := f.EventNames.Ptr(); p != nil {
		names = *p
	}
	return scanSubscription(db.Pool.QueryRow(ctx, `WITH s AS (UPDATE webhook_subscriptions SET
			url = CASE WHEN $3 THEN $4 ELSE url END,
			active = CASE WHEN $5 THEN $6 ELSE active END,
			disabled_reason = CASE WHEN $5 AND $6 THEN NULL ELSE disabled_reason END,
			event_names = CASE WHEN $7 THEN $8 ELSE event_names END,
			basic_auth_ciphertext = CASE WHEN $9 THEN $10 ELSE basic_auth_ciphertext END,
			basic_auth_username = CASE WHEN $9 THEN $11 ELSE basic_auth_username END,
			secret_version = secret_version + CASE WHEN $9 THEN 1 ELSE 0 END,
			updated_at = greatest(now(), updated_at + interval '1 microsecond')
			WHERE merchant_account_id = $1 AND id = $2 RETURNING *)
		SELECT `+subColumns+` FROM s`,
		m, id, f.URL.Set, f.URL.Value, f.Active.Set && !f.Active.Null, f.Active.Value,
		f.EventNames.Set, names, f.BasicAuth.Set, basicAuth, username))
}

// DeleteWebhookSubscription removes a subscription; its deliveries and
// their attempts go with it.
func (db *DB) DeleteWebhookSubscription(ctx context.Context, m, id string) error {
	if !coreapi.IsUUID(id) {
		return notFoundSubscription()
	}
	tag, err := db.Pool.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE merchant_account_id = $1 AND id = $2`, m, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFoundSubscription()
	}
	return nil
}

// RotateWebhookSecret makes secret the signing secret; the current one
// becomes the previous, signing until graceEnds.
func (db *DB) RotateWebhookSecret(ctx context.Context, m, id, secret string, graceEnds time.Time) (*coreapi.WebhookSubscription, error) {
	if !coreapi.IsUUID(id) {
		return nil, notFoundSubscription()
	}
	return scanSubscription(db.Pool.QueryRow(ctx, `WITH s AS (UPDATE webhook_subscriptions SET
			previous_secret_ciphertext = secret_ciphertext, previous_secret_expires_at = $4,
			secret_ciphertext = $3, secret_version = secret_version + 1,
			updated_at = greatest(now(), updated_at + interval '1 microsecond')
			WHERE merchant_account_id = $1 AND id = $2 RETURNING *)
		SELECT `+subColumns+` FROM s`, m, id, secret, graceEnds))
}

// WebhookHealth counts a subscription's attempts since then, and its
// pending and failed deliveries.
func (db *DB) WebhookHealth(ctx context.Context, m, id string, since time.Time) (coreapi.WebhookHealth, error) {
	var h coreapi.WebhookHealth
	var failed int
	err := db.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM webhook_attempts WHERE subscription_id = $2 AND created_at >= $3),
			(SELECT count(*) FROM webhook_attempts WHERE subscription_id = $2 AND created_at >= $3 AND status = 'failed'),
			(SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $2 AND status = 'pending'),
			(SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $2 AND status = 'failed')
		FROM webhook_subscriptions WHERE merchant_account_id = $1 AND id = $2`, m, id, since).
		Scan(&h.RecentAttempts, &failed, &h.QueueDepth, &h.FailedCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, notFoundSubscription()
	}
	if h.RecentAttempts > 0 {
		h.FailureRate = float64(failed) / float64(h.RecentAttempts)
	}
	return h, err
}

// WebhookEventPayload returns event id's stored payload, the body of
// every delivery of it.
func (db *DB) WebhookEventPayload(ctx context.Context, m, id string) ([]byte, error) {
	if !coreapi.IsUUID(id) {
		return nil, fmt.Errorf("event: %w", coreapi.ErrNotFound)
	}
	var payload string
	err := db.Pool.QueryRow(ctx, `SELECT payload FROM webhook_events WHERE merchant_account_id = $1 AND id = $2`, m, id).Scan(&payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("event: %w", coreapi.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return []byte(payload), nil
}

// ListWebhookDeliveries lists the deliveries of event eventID, or of
// subscription subscriptionID, newest first, with their attempts; each
// attempt's request with the event's payload as its body when
// withPayload.
func (db *DB) ListWebhookDeliveries(ctx context.Context, m, eventID, subscriptionID string, limit int, withPayload bool) ([]coreapi.WebhookDelivery, error) {
	var ev, sub *string
	if eventID != "" {
		ev = &eventID
	}
	if subscriptionID != "" {
		sub = &subscriptionID
	}
	rows, err := db.Pool.Query(ctx, `SELECT d.id, d.event_id::text, e.name, d.subscription_id::text, d.status,
			CASE WHEN d.status = 'pending' THEN d.next_attempt_at END, d.created_at, d.updated_at,
			CASE WHEN $5 THEN e.payload END
		FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
		WHERE d.merchant_account_id = $1 AND ($2::uuid IS NULL OR d.event_id = $2) AND ($3::uuid IS NULL OR d.subscription_id = $3)
		ORDER BY d.id DESC LIMIT $4`, m, ev, sub, limit, withPayload)
	if err != nil {
		return nil, err
	}
	var payloads []*string // by delivery, as ds
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (coreapi.WebhookDelivery, error) {
		var d coreapi.WebhookDelivery
		var payload *string
		err := r.Scan(&d.ID, &d.EventID, &d.EventName, &d.SubscriptionID, &d.Status, &d.NextAttemptAt, &d.CreatedAt, &d.UpdatedAt, &payload)
		d.Attempts = []coreapi.WebhookAttempt{}
		payloads = append(payloads, payload)
		return d, err
	})
	if err != nil || len(ds) == 0 {
		return ds, err
	}
	ids := make([]int64, len(ds))
	at := make(map[int64]int, len(ds))
	for i, d := range ds {
		ids[i], at[d.ID] = d.ID, i
	}
	rows, err = db.Pool.Query(ctx, `SELECT delivery_id, status, response_code, error, latency_ms, created_at,
			request_url, request_headers, response_headers, response_body, response_body_truncated
		FROM webhook_attempts WHERE delivery_id = ANY ($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	var (
		id                int64
		a                 coreapi.WebhookAttempt
		latency           int32
		url, body         *string
		reqHdrs, respHdrs map[string]string
		truncated         bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &a.Status, &a.ResponseCode, &a.Error, &latency, &a.CreatedAt,
		&url, &reqHdrs, &respHdrs, &body, &truncated}, func() error {
		a.Latency = time.Duration(latency) * time.Millisecond
		a.Request, a.Response = nil, nil
		if url != nil {
			// The payload is shared, not copied: every attempt sent it.
			a.Request = &coreapi.WebhookRequest{URL: *url, Headers: reqHdrs, Body: payloads[at[id]]}
		}
		if a.ResponseCode != nil && respHdrs != nil && body != nil {
			a.Response = &coreapi.WebhookResponse{StatusCode: *a.ResponseCode, Headers: respHdrs, Body: *body, BodyTruncated: truncated}
		}
		reqHdrs, respHdrs = nil, nil
		ds[at[id]].Attempts = append(ds[at[id]].Attempts, a)
		return nil
	})
	return ds, err
}

// ReplayWebhookEvent makes the event's deliveries that are not pending
// due at now, and adds one for each active subscription that matches the
// event but has none (created since), all of subscriptionID's alone when
// set. It returns how many deliveries the event now has pending.
func (db *DB) ReplayWebhookEvent(ctx context.Context, m, eventID, subscriptionID string, now time.Time) (int, error) {
	var sub *string
	if subscriptionID != "" {
		sub = &subscriptionID
	}
	var n int
	err := db.InTx(ctx, func(tx *Tx) error {
		var b pgx.Batch
		b.Queue(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $4, updated_at = $4
			WHERE merchant_account_id = $1 AND event_id = $2 AND ($3::uuid IS NULL OR subscription_id = $3) AND status <> 'pending'`,
			m, eventID, sub, now)
		b.Queue(`INSERT INTO webhook_deliveries (event_id, subscription_id, merchant_account_id, status, next_attempt_at, created_at, updated_at)
			SELECT e.id, s.id, e.merchant_account_id, 'pending', $4, $4, $4
			FROM webhook_events e JOIN webhook_subscriptions s ON s.merchant_account_id = e.merchant_account_id
			WHERE e.merchant_account_id = $1 AND e.id = $2 AND ($3::uuid IS NULL OR s.id = $3) AND s.active
				AND (s.event_names IS NULL OR e.name = ANY (s.event_names))
				AND NOT EXISTS (SELECT FROM webhook_deliveries d WHERE d.event_id = e.id AND d.subscription_id = s.id)`,
			m, eventID, sub, now)
		b.Queue(`SELECT count(*) FROM webhook_deliveries WHERE merchant_account_id = $1 AND event_id = $2
			AND ($3::uuid IS NULL OR subscription_id = $3) AND status = 'pending'`, m, eventID, sub).
			QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
		return tx.tx.SendBatch(ctx, &b).Close()
	})
	return n, err
}

// ReplayFailedWebhookDeliveries makes a subscription's failed deliveries
// of events since then due at now.
func (db *DB) ReplayFailedWebhookDeliveries(ctx context.Context, m, subscriptionID string, since, now time.Time) (int, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $4, updated_at = $4
		WHERE merchant_account_id = $1 AND subscription_id = $2 AND status = 'failed' AND created_at >= $3`,
		m, subscriptionID, since, now)
	return int(tag.RowsAffected()), err
}

// ClaimWebhookDeliveries leases due deliveries: up to perSubscription of
// each active subscription not in skip, the oldest due first. The rows
// are locked while the claim runs (FOR UPDATE SKIP LOCKED: a concurrent
// claim passes over them rather than waiting) and leased after it by
// their next_attempt_at, moved to the lease's end.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, perSubscription int, skip []string) ([]webhooks.Claim, error) {
	if skip == nil {
		skip = []string{}
	}
	rows, err := db.Pool.Query(ctx, `WITH due AS (
			SELECT d.id FROM webhook_subscriptions s
			CROSS JOIN LATERAL (SELECT d.id FROM webhook_deliveries d
				WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= $1
				ORDER BY d.next_attempt_at LIMIT $3 FOR UPDATE OF d SKIP LOCKED) d
			WHERE s.active AND NOT (s.id = ANY ($4::uuid[])))
		UPDATE webhook_deliveries d SET next_attempt_at = $2
		FROM due, webhook_events e, webhook_subscriptions s
		WHERE d.id = due.id AND e.id = d.event_id AND s.id = d.subscription_id
		RETURNING d.id, e.id::text, e.created_at, e.payload, d.attempts, s.id::text, s.merchant_account_id, s.url,
			s.secret_version, s.secret_ciphertext,
			CASE WHEN s.previous_secret_expires_at > $1 THEN s.previous_secret_ciphertext END, s.basic_auth_ciphertext`,
		now, now.Add(lease), perSubscription, skip)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Claim, error) {
		var c webhooks.Claim
		var payload string
		err := r.Scan(&c.DeliveryID, &c.EventID, &c.EventCreatedAt, &payload, &c.Attempts, &c.SubscriptionID,
			&c.MerchantAccountID, &c.URL, &c.SecretVersion, &c.Secret, &c.PreviousSecret, &c.BasicAuth)
		c.Payload = []byte(payload)
		return c, err
	})
}

// RecordWebhookOutcomes writes a batch's attempts and its deliveries'
// new state in one statement, and disables the subscriptions that
// answered 410 Gone. A delivery no longer pending (replayed or settled
// by another claim after this one's lease ended) keeps its state; the
// attempt is recorded all the same.
func (db *DB) RecordWebhookOutcomes(ctx context.Context, outcomes []webhooks.Outcome) error {
	n := len(outcomes)
	var (
		ids      = make([]int64, n)
		subs     = make([]string, n)
		status   = make([]string, n)
		next     = make([]*time.Time, n)
		codes    = make([]*int, n)
		errs     = make([]*string, n)
		latency  = make([]int32, n)
		at       = make([]time.Time, n)
		urls     = make([]*string, n)
		reqHdrs  = make([]*string, n)
		respHdrs = make([]*string, n)
		bodies   = make([]*string, n)
		cut      = make([]bool, n)
		gone     []string
	)
	for i, o := range outcomes {
		ids[i], subs[i], status[i], next[i] = o.DeliveryID, o.SubscriptionID, string(o.Status), o.NextAttemptAt
		codes[i], errs[i], latency[i], at[i] = o.ResponseCode, o.Error, int32(o.Latency.Milliseconds()), o.At
		if r := o.Request; r != nil {
			urls[i], reqHdrs[i] = &r.URL, headersJSON(r.Headers)
		}
		if r := o.Response; r != nil {
			respHdrs[i], bodies[i], cut[i] = headersJSON(r.Headers), &r.Body, r.BodyTruncated
		}
		if o.Gone {
			gone = append(gone, o.SubscriptionID)
		}
	}
	var b pgx.Batch
	b.Queue(`WITH o AS (SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::timestamptz[], $5::int[], $6::text[],
			$7::int[], $8::timestamptz[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bool[])
			AS o (id, sid, status, next, code, err, latency, at, url, req_headers, resp_headers, body, cut)),
		a AS (INSERT INTO webhook_attempts (delivery_id, subscription_id, status, response_code, error, latency_ms, created_at,
				request_url, request_headers, response_headers, response_body, response_body_truncated)
			SELECT id, sid, CASE WHEN status = 'succeeded' THEN 'succeeded' ELSE 'failed' END, code, err, latency, at,
				url, req_headers::jsonb, resp_headers::jsonb, body, cut FROM o)
		UPDATE webhook_deliveries d SET status = o.status, attempts = d.attempts + 1, next_attempt_at = o.next, updated_at = o.at
		FROM o WHERE d.id = o.id AND d.status = 'pending'`,
		ids, subs, status, next, codes, errs, latency, at, urls, reqHdrs, respHdrs, bodies, cut)
	if len(gone) > 0 {
		b.Queue(`UPDATE webhook_subscriptions SET active = false, disabled_reason = 'gone', updated_at = now()
			WHERE id = ANY ($1::uuid[]) AND active`, gone)
	}
	return db.sendBatch(ctx, &b)
}

// headersJSON is a header set as the jsonb column keeps it.
func headersJSON(h map[string]string) *string {
	raw, err := json.Marshal(h)
	if err != nil { // a map of strings always marshals
		return nil
	}
	s := string(raw)
	return &s
}

// sendBatch runs b in one round trip, in one implicit transaction.
func (db *DB) sendBatch(ctx context.Context, b *pgx.Batch) error {
	return db.Pool.SendBatch(ctx, b).Close()
}

// WebhookQueueDepths counts the pending deliveries of each subscription
// that has any.
func (db *DB) WebhookQueueDepths(ctx context.Context) (map[string]int, error) {
	rows, err := db.Pool.Query(ctx, `SELECT subscription_id::text, count(*) FROM webhook_deliveries
		WHERE status = 'pending' GROUP BY subscription_id`)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		out[id] = n
		return nil
	})
	return out, err
}
