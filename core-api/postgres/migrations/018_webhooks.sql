-- Outbound webhooks (docs/webhooks.md).
--
-- webhook_subscriptions: a merchant account's endpoints. The signing
-- secrets and the Basic authentication credentials are Vault transit
-- ciphertext (core-api/vaulttransit), bound to the row's merchant account
-- and id; never stored in the clear. During a rotation's grace period the
-- previous secret still signs, until previous_secret_expires_at.
CREATE TABLE webhook_subscriptions (
    id                         uuid PRIMARY KEY,
    merchant_account_id        text NOT NULL REFERENCES merchant_accounts (id) ON DELETE CASCADE,
    url                        text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    active                     boolean NOT NULL,
    -- NULL: every event.
    event_names                text[],
    secret_ciphertext          text NOT NULL CHECK (secret_ciphertext LIKE 'vault:v%'),
    previous_secret_ciphertext text CHECK (previous_secret_ciphertext LIKE 'vault:v%'),
    previous_secret_expires_at timestamptz,
    basic_auth_ciphertext      text CHECK (basic_auth_ciphertext LIKE 'vault:v%'),
    basic_auth_username        text,
    -- Bumped by every change of the secrets or credentials: delivery
    -- workers cache the decrypted ones by (id, secret_version).
    secret_version             integer NOT NULL DEFAULT 1,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    disabled_reason            text
);

CREATE INDEX webhook_subscriptions_list_idx ON webhook_subscriptions (merchant_account_id, created_at, id);

-- webhook_events: the transactional outbox. A row is written in the same
-- database transaction as the change it announces, so it exists if and
-- only if the change committed. payload is the body every delivery sends,
-- byte for byte, so a signature over it is the same on each retry. No
-- foreign key: the history outlives what it names.
CREATE TABLE webhook_events (
    id                  uuid PRIMARY KEY,
    merchant_account_id text NOT NULL,
    name                text NOT NULL,
    payload             text NOT NULL,
    created_at          timestamptz NOT NULL
);

CREATE INDEX webhook_events_list_idx ON webhook_events (merchant_account_id, created_at, id);

-- webhook_deliveries: one per event and subscription, written with the
-- event for every subscription it matches. Each subscription is its own
-- queue: workers claim a subscription's due rows (FOR UPDATE SKIP LOCKED)
-- up to its concurrency limit, so a slow or failing endpoint only holds
-- its own rows.
CREATE TABLE webhook_deliveries (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id            uuid NOT NULL REFERENCES webhook_events (id),
    subscription_id     uuid NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    merchant_account_id text NOT NULL,
    status              text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts            integer NOT NULL DEFAULT 0,
    -- When a pending delivery is due. A claim moves it to the end of the
    -- claim's lease: a worker that died mid-delivery leaves the row due
    -- again then (at least once).
    next_attempt_at     timestamptz,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);

CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (subscription_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_failed_idx ON webhook_deliveries (subscription_id, created_at) WHERE status = 'failed';

-- webhook_attempts: every try of a delivery, history.
CREATE TABLE webhook_attempts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id     bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    subscription_id uuid NOT NULL,
    status          text NOT NULL CHECK (status IN ('succeeded', 'failed')),
    response_code   integer,
    error           text,
    latency_ms      integer NOT NULL,
    created_at      timestamptz NOT NULL
);

CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);
CREATE INDEX webhook_attempts_health_idx ON webhook_attempts (subscription_id, created_at);

GRANT UPDATE, DELETE ON webhook_subscriptions TO payorch_core;
GRANT UPDATE ON webhook_deliveries TO payorch_core;
