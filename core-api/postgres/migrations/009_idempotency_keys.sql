-- Idempotency keys (core-api/idempotency, docs/api-conventions.md
-- "Idempotency"): one row per (merchant account, endpoint, key), claimed
-- by the request that runs the work, then holding its response for 24
-- hours. No foreign key to merchant_accounts: a row outlives nothing for
-- more than a day, and must not hold up an account's deletion.
CREATE TABLE idempotency_keys (
    merchant_account_id text NOT NULL,
    endpoint            text NOT NULL,
    key                 text NOT NULL CHECK (key ~ '^[ -~]{1,255}$'),
    -- SHA-256 of the request (method, path and query, body bytes).
    fingerprint         bytea NOT NULL CHECK (length(fingerprint) = 32),
    -- The claim under way: who holds it and until when. A claim whose
    -- lease ran out (its process died) may be taken over by a retry.
    owner               uuid NOT NULL,
    locked_until        timestamptz,
    -- The completed response; NULL while the first request runs.
    response_status       smallint CHECK (response_status BETWEEN 200 AND 499),
    response_content_type text,
    response_body         bytea,
    created_at          timestamptz NOT NULL DEFAULT now(),
    expires_at          timestamptz NOT NULL,
    PRIMARY KEY (merchant_account_id, endpoint, key),
    CHECK ((response_status IS NULL) = (locked_until IS NOT NULL))
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- A claim is completed (UPDATE), given back after a failure and purged
-- once expired (DELETE).
GRANT UPDATE, DELETE ON idempotency_keys TO payorch_core;
