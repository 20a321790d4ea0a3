-- Checkout sessions: what lets the secure card fields' iframes send a card
-- to vault-proxy (PUT /checkout/sessions/{id}/fields) with no credential
-- but the session id, and POST /transactions pay with the card they sent.
-- A session belongs to one merchant account, expires (expires_at), is used
-- by at most one payment (used_at, and the Idempotency-Key of that payment
-- so its retry is the same payment), and takes a bounded number of field
-- submissions (field_attempts). Its card is a token of vaulted_cards
-- (payment_method_id): vaulted with the fields (payment_method_kind
-- 'card'), or a stored card the buyer picked ('id'). No card data here;
-- amount, currency, cart items and metadata are the merchant's order, as
-- it gave them.
CREATE TABLE checkout_sessions (
    id                     uuid PRIMARY KEY,
    merchant_account_id    text NOT NULL,
    amount                 bigint,
    currency               text,
    cart_items             jsonb,
    metadata               jsonb,
    expires_at             timestamptz NOT NULL,
    created_at             timestamptz NOT NULL,
    payment_method_id      uuid,
    payment_method_kind    text CHECK (payment_method_kind IN ('card', 'id')),
    field_attempts         integer NOT NULL DEFAULT 0,
    used_at                timestamptz,
    used_idempotency_key   text
);
CREATE INDEX checkout_sessions_expires_at ON checkout_sessions (expires_at);
GRANT UPDATE, DELETE ON checkout_sessions TO payorch_vault;

-- The origins a merchant account's pages embed the secure fields from: the
-- field page's Content-Security-Policy frame-ancestors, and the only
-- origins its iframes talk to. Without a row, no origin may embed them.
CREATE TABLE checkout_settings (
    merchant_account_id text PRIMARY KEY,
    allowed_origins     text[] NOT NULL,
    updated_at          timestamptz NOT NULL
);
GRANT UPDATE ON checkout_settings TO payorch_vault;
