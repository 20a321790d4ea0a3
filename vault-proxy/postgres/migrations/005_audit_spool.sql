-- Where each vault-proxy instance's audit spool (vault-proxy/auditspool) has
-- shipped to: the sequence number of the last record stored in
-- audit_events. A batch of records and the move of its spool's checkpoint
-- commit in one statement, so a record is stored exactly once across
-- crashes and restarts of either side.
CREATE TABLE audit_spool_checkpoints (
    spool_id    uuid PRIMARY KEY,
    shipped_seq bigint NOT NULL CHECK (shipped_seq > 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
