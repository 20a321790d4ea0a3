-- The detokenization audit log: who touched which token, why, and how it
-- ended. It never holds card data; values are never written, only names.
CREATE TABLE audit_events (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at         timestamptz NOT NULL DEFAULT now(),
    actor               text NOT NULL,
    merchant_account_id text NOT NULL,
    action              text NOT NULL,
    tokens              uuid[] NOT NULL DEFAULT '{}',
    purpose             text NOT NULL DEFAULT '',
    outcome             text NOT NULL,
    request_id          text NOT NULL DEFAULT '',
    detail              jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX audit_events_merchant_time ON audit_events (merchant_account_id, occurred_at DESC, id DESC);
