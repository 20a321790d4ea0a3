-- Settling what a crash or a lost answer left in flight
-- (docs/transactions.md, "Sync and the sweep").

-- The resource a request behind an Idempotency-Key recorded before it
-- called a processor (a transaction's or a refund's id): a retry that
-- takes the key over resumes that resource instead of moving money again.
ALTER TABLE idempotency_keys ADD COLUMN resource_id text CHECK (char_length(resource_id) BETWEEN 1 AND 255);

-- The sweep's scan: transactions whose authorization or void has been in
-- flight, unchanged, for a while. Captures and refunds in flight have
-- their own partial indexes (007_transactions.sql).
CREATE INDEX transactions_unsettled_idx ON transactions (updated_at)
    WHERE status IN ('processing', 'authorization_void_pending');
