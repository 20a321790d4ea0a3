package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	vaultproxy "github.com/payorch/vault-proxy"
)

// cardBatcher writes the vaultings of this process that arrive while one
// transaction of them is being written together, in the next one.
//
// Every vaulted card's audit record joins the audit chain, whose head is
// locked from the record's link to the commit (auditchain.go). With one
// transaction per card, one vaulting at a time could commit, across every
// instance (BenchmarkVaultCard, 8 goroutines: ~1.7x slower); batched, a
// commit carries every card that waited for the one before.
type cardBatcher struct {
	mu      sync.Mutex
	queue   []*cardInsert
	writing bool // a writer goroutine is emptying queue
}

// cardInsert is one vaulting waiting for its batch.
type cardInsert struct {
	ctx   context.Context
	card  *vaultproxy.VaultedCard
	event vaultproxy.AuditEvent
	at    time.Time       // the record's time, as hashed
	rec   []byte          // room for chain_prev, then the record's content (link)
	done  chan cardStored // buffered: the writer never waits for the caller
}

// cardStored answers a cardInsert: the card's row times, or why it was
// not stored. The writer leaves the caller's card alone: a caller whose
// context ended no longer waits for it.
type cardStored struct {
	createdAt, updatedAt time.Time
	err                  error
}

// cardBatchTimeout bounds one batch's transaction. The writer runs for
// every waiting vaulting, so it does not end with any one caller's context.
const cardBatchTimeout = 30 * time.Second

// InsertCardAudited stores a vaulted card and its audit event in one
// transaction, so there is never a card without its audit record. A
// closed merchant account's card is vaultproxy.ErrMerchantAccountClosed
// (migration 011), and nothing is stored.
//
// The event joins the audit chain (its time is taken here, to the
// microsecond PostgreSQL keeps, as it is hashed). The cards of this
// process's concurrent vaultings share a transaction (cardBatcher); one
// that fails alone (a constraint of the row) is written again by itself,
// so it fails only its own vaulting. When ctx ends first, the card may
// still be stored, as when a statement's context ends.
func (db *DB) InsertCardAudited(ctx context.Context, c *vaultproxy.VaultedCard, e vaultproxy.AuditEvent) error {
	in := &cardInsert{ctx: ctx, card: c, event: e, at: time.Now().Truncate(time.Microsecond), done: make(chan cardStored, 1)}
	in.rec = appendAuditContent(make([]byte, sha256.Size, 256), in.record())
	b := &db.cardBatch
	b.mu.Lock()
	b.queue = append(b.queue, in)
	start := !b.writing
	b.writing = true
	b.mu.Unlock()
	if start {
		go db.writeCardBatches(context.WithoutCancel(ctx))
	}
	select {
	case r := <-in.done:
		if r.err == nil {
			c.CreatedAt, c.UpdatedAt = r.createdAt, r.updatedAt
		}
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// record is the audit record as stored: its detail the column's default.
func (in *cardInsert) record() *auditRecord {
	return &auditRecord{at: in.at, actor: in.event.Actor, merchantAccountID: in.card.MerchantAccountID, action: in.event.Action,
		tokens: []uuid.UUID{in.card.Token}, purpose: in.event.Purpose, outcome: in.event.Outcome, requestID: in.event.RequestID,
		detail: []byte("{}")}
}

// writeCardBatches writes the queue's cards, a batch per transaction,
// until the queue is empty.
func (db *DB) writeCardBatches(ctx context.Context) {
	b := &db.cardBatch
	for {
		b.mu.Lock()
		batch := b.queue
		b.queue = nil
		if len(batch) == 0 {
			b.writing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		live := batch[:0]
		for _, in := range batch {
			if err := in.ctx.Err(); err != nil {
				in.done <- cardStored{err: err} // abandoned before it was written: nothing stored
				continue
			}
			live = append(live, in)
		}
		if len(live) == 0 {
			continue
		}
		err := db.insertCards(ctx, live)
		switch {
		case err == nil || len(live) == 1: // answered
		case errors.Is(err, context.DeadlineExceeded):
			// The database did not answer in time: it would not for each
			// card alone either.
			for _, in := range live {
				in.done <- cardStored{err: err}
			}
		default:
			for _, in := range live {
				_ = db.insertCards(ctx, []*cardInsert{in})
			}
		}
	}
}

// insertCards stores the cards and their audit records in one transaction
// and answers each (done), or returns the transaction's error without
// answering any when there are several.
//
// Two round trips: the shared locks on the cards' merchant accounts, which
// account is closed, and the chain's head (locked); then, the links
// computed here, the rows and the new head, and the commit.
func (db *DB) insertCards(ctx context.Context, ins []*cardInsert) error {
	ctx, cancel := context.WithTimeout(ctx, cardBatchTimeout)
	defer cancel()
	stored, err := db.insertCardsTx(ctx, ins)
	if err != nil && len(ins) > 1 {
		return err
	}
	for i, in := range ins {
		if err != nil {
			in.done <- cardStored{err: err}
			continue
		}
		in.done <- stored[i]
	}
	return err
}

// insertCardsTx is insertCards' transaction: each card's answer, or the
// transaction's error.
func (db *DB) insertCardsTx(ctx context.Context, ins []*cardInsert) (stored []cardStored, err error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection released inside a transaction (an error below) is
	// closed by the pool, which rolls the transaction back.
	defer conn.Release()

	var merchants []string
	for _, in := range ins {
		merchants = append(merchants, in.card.MerchantAccountID)
	}
	// One order for every batch: two batches waiting for each other's
	// shared locks behind a closure's exclusive one would deadlock.
	slices.Sort(merchants)
	merchants = slices.Compact(merchants)
	var lock pgx.Batch
	lock.Queue(`BEGIN`)
	for _, m := range merchants {
		lock.Queue(lockMerchantAccountSQL(false), m)
	}
	// Read after the shared locks are held: no closure can commit between
	// this and the commit.
	lock.Queue(`SELECT coalesce(array_agg(merchant_account_id), '{}') FROM merchant_account_closures
		WHERE closed AND merchant_account_id = ANY($1)`, merchants)
	lock.Queue(lockChainSQL)
	var closed []string
	var head []byte
	if err := sendBatch(ctx, conn, &lock, func(br pgx.BatchResults) error {
		for range len(merchants) + 1 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&closed); err != nil {
			return err
		}
		return br.QueryRow().Scan(&head)
	}); err != nil {
		return nil, err
	}

	last, err := chainHead(head)
	if err != nil {
		return nil, err
	}
	rows := cardRows{}
	stored = make([]cardStored, len(ins))
	prev := last
	for i, in := range ins {
		if slices.Contains(closed, in.card.MerchantAccountID) {
			stored[i].err = vaultproxy.ErrMerchantAccountClosed
			continue
		}
		prev, last = last, link(in.rec, last)
		rows.add(in, prev, last)
	}
	var write pgx.Batch
	if len(rows.token) > 0 {
		write.Queue(insertCardsSQL, rows.args(prev, last)...)
	}
	write.Queue(`COMMIT`)
	times := map[uuid.UUID][2]time.Time{}
	err = sendBatch(ctx, conn, &write, func(br pgx.BatchResults) error {
		if len(rows.token) > 0 {
			r, err := br.Query()
			if err != nil {
				return err
			}
			var id uuid.UUID
			var t [2]time.Time
			if _, err := pgx.ForEachRow(r, []any{&id, &t[0], &t[1]}, func() error {
				times[id] = t
				return nil
			}); err != nil {
				return err
			}
		}
		_, err := br.Exec()
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, in := range ins {
		if stored[i].err == nil {
			t := times[in.card.Token]
			stored[i].createdAt, stored[i].updatedAt = t[0], t[1]
		}
	}
	return stored, nil
}

// sendBatch sends b on conn and reads its results with read.
func sendBatch(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	br := conn.SendBatch(ctx, b)
	err := read(br)
	return errors.Join(err, br.Close())
}

// insertCardsSQL stores a batch's cards ($1-$12, one array per column) and
// their audit records ($13-$20 with the cards' tokens and merchant
// accounts, chained in array order: the ids follow it), and moves the
// chain's head ($21, $22).
const insertCardsSQL = `WITH card AS (
		INSERT INTO vaulted_cards (id, merchant_account_id, kind, data_key_id, wrapped_record_key, ciphertext,
		                           fingerprint, scheme, card_type, bin, last4, expiration_date)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::bytea[], $6::bytea[],
		                     $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
		RETURNING id, created_at, updated_at),
	audit AS (
		INSERT INTO audit_events (occurred_at, actor, merchant_account_id, action, tokens, purpose, outcome, request_id,
		                          chain_prev, chain_hash)
		SELECT at, actor, merchant, action, ARRAY[token], purpose, outcome, request_id, prev, hash
		FROM unnest($1::uuid[], $2::text[], $13::timestamptz[], $14::text[], $15::text[], $16::text[], $17::text[],
		            $18::text[], $19::bytea[], $20::bytea[])
		     WITH ORDINALITY AS r (token, merchant, at, actor, action, purpose, outcome, request_id, prev, hash, n)
		ORDER BY n),
	head AS (
		UPDATE audit_chain SET prev = $21, head = $22)
	SELECT id, created_at, updated_at FROM card`

// cardRows are insertCardsSQL's arrays.
type cardRows struct {
	token, dataKey                                            []uuid.UUID
	merchant, kind, fingerprint, scheme, cardType, bin, last4 []string
	expiration                                                []*string
	wrappedKey, ciphertext, prev, hash                        [][]byte
	at                                                        []time.Time
	actor, action, purpose, outcome, requestID                []string
}

func (r *cardRows) add(in *cardInsert, prev, hash [sha256.Size]byte) {
	c, e := in.card, in.event
	var exp *string
	if c.ExpirationDate != "" {
		exp = &c.ExpirationDate
	}
	r.token, r.merchant, r.kind = append(r.token, c.Token), append(r.merchant, c.MerchantAccountID), append(r.kind, string(c.Kind))
	r.dataKey, r.wrappedKey, r.ciphertext = append(r.dataKey, c.Sealed.DataKeyID), append(r.wrappedKey, c.Sealed.WrappedKey), append(r.ciphertext, c.Sealed.Ciphertext)
	r.fingerprint, r.scheme, r.cardType = append(r.fingerprint, c.Fingerprint), append(r.scheme, c.Scheme), append(r.cardType, c.CardType)
	r.bin, r.last4, r.expiration = append(r.bin, c.BIN), append(r.last4, c.Last4), append(r.expiration, exp)
	r.at, r.actor, r.action = append(r.at, in.at), append(r.actor, e.Actor), append(r.action, e.Action)
	r.purpose, r.outcome, r.requestID = append(r.purpose, e.Purpose), append(r.outcome, e.Outcome), append(r.requestID, e.RequestID)
	r.prev, r.hash = append(r.prev, prev[:]), append(r.hash, hash[:])
}

// args are insertCardsSQL's arguments, with the chain's new head.
func (r *cardRows) args(prev, head [sha256.Size]byte) []any {
	return []any{uuidArray(r.token), r.merchant, r.kind, uuidArray(r.dataKey), r.wrappedKey, r.ciphertext,
		r.fingerprint, r.scheme, r.cardType, r.bin, r.last4, r.expiration,
		r.at, r.actor, r.action, r.purpose, r.outcome, r.requestID, r.prev, r.hash, prev[:], head[:]}
}
