-- Bank debit mandates are created pending and changed by the processor's
-- notifications (docs/notifications.md): activated, revoked, and given
-- the recurring token that lets the merchant charge them on its own
-- initiative. recurring_token_at records when that token arrived.
ALTER TABLE mandates ADD COLUMN recurring_token_at timestamptz;

-- The payment service a mandate was set up through (a bank debit routed
-- to one): its configuration verifies the mandate's notifications and
-- sends its merchant-initiated debits and its revocation. NULL: the
-- environment's built-in connector configuration. Not a foreign key, as
-- for transactions: a mandate outlives what it was made with.
ALTER TABLE mandates ADD COLUMN payment_service_id uuid;

-- A mandate's history: one row per change or notification, never updated
-- or deleted, read through GET /mandates/{id}/events. No foreign keys:
-- the history outlives the payment method and, like
-- mandates_of_deleted_accounts, the merchant account.
CREATE TABLE mandate_events (
    id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    merchant_account_id    text NOT NULL,
    mandate_id             text NOT NULL,
    payment_method_id      uuid NOT NULL,
    name                   text NOT NULL,
    status_before          text,
    status_after           text NOT NULL,
    notification_connector text,
    notification_id        text CHECK (char_length(notification_id) BETWEEN 1 AND 255),
    raw_headers            jsonb,
    raw_body               text,
    created_at             timestamptz NOT NULL,
    CHECK ((notification_id IS NULL) = (notification_connector IS NULL))
);

CREATE INDEX mandate_events_list_idx ON mandate_events (merchant_account_id, mandate_id, created_at, id);
CREATE UNIQUE INDEX mandate_events_notification_idx
    ON mandate_events (merchant_account_id, mandate_id, notification_connector, notification_id)
    WHERE notification_id IS NOT NULL;
