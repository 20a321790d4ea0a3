-- Transactions, their captures and refunds, and the events that record
-- every change (docs/transactions.md). Every row carries its merchant
-- account; captures, refunds and events reference their transaction by
-- (merchant_account_id, id), so none can point at another account's.
-- Nothing here is card data: a payment method is its token and display
-- data, and a connector's text is stored with card numbers masked.

-- status and the amounts change only through the state machine
-- (core-api/transitions.go), under this row's lock (SELECT ... FOR
-- UPDATE), in the transaction that writes the change's event. The CHECK
-- repeats its invariants: the pending amounts are the captures and
-- refunds in flight, reserved against the limits until the connector
-- settles them.
CREATE TABLE transactions (
    id                             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    merchant_account_id            text NOT NULL REFERENCES merchant_accounts (id),
    status                         text NOT NULL CHECK (status IN ('processing', 'buyer_approval_pending',
                                       'authorization_succeeded', 'authorization_declined', 'authorization_failed',
                                       'authorization_void_pending', 'authorization_voided',
                                       'capture_pending', 'capture_succeeded')),
    intent                         text NOT NULL CHECK (intent IN ('authorize', 'capture')),
    amount                         bigint NOT NULL CHECK (amount BETWEEN 0 AND 99999999),
    currency                       text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    country                        text CHECK (country ~ '^[A-Z]{2}$'),
    authorized_amount              bigint NOT NULL DEFAULT 0,
    captured_amount                bigint NOT NULL DEFAULT 0,
    refunded_amount                bigint NOT NULL DEFAULT 0,
    capture_pending_amount         bigint NOT NULL DEFAULT 0,
    refund_pending_amount          bigint NOT NULL DEFAULT 0,
    -- The payment method as it was: no foreign key, a transaction
    -- outlives a deleted payment method.
    payment_method_id              uuid,
    payment_method_method          text NOT NULL,
    payment_method_scheme          text,
    payment_method_label           text,
    payment_method_approval_url    text,
    -- No foreign key either: a buyer's deletion keeps its transactions.
    buyer_id                       uuid,
    payment_service_id             uuid,
    -- The connector's id of the authorization.
    payment_service_transaction_id text,
    -- The idempotency reference of the latest void sent to the connector.
    void_reference                 uuid,
    error_code                     text,
    raw_response_code              text,
    raw_response_description       text,
    avs_response_code              text,
    cvv_response_code              text,
    scheme_transaction_id          text,
    payment_source                 text NOT NULL CHECK (payment_source IN ('ecommerce', 'moto', 'recurring', 'installment', 'card_on_file')),
    merchant_initiated             boolean NOT NULL,
    is_subsequent_payment          boolean NOT NULL,
    installment_count              integer CHECK (installment_count BETWEEN 1 AND 99),
    cart_items                     jsonb CHECK (cart_items IS NULL OR jsonb_typeof(cart_items) = 'array'),
    external_identifier            text CHECK (char_length(external_identifier) BETWEEN 1 AND 200),
    metadata                       jsonb CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object'),
    created_at                     timestamptz NOT NULL DEFAULT now(),
    updated_at                     timestamptz NOT NULL DEFAULT now(),
    authorized_at                  timestamptz,
    captured_at                    timestamptz,
    voided_at                      timestamptz,
    CONSTRAINT transactions_amounts CHECK (
        authorized_amount BETWEEN 0 AND amount
        AND captured_amount >= 0 AND capture_pending_amount >= 0
        AND captured_amount + capture_pending_amount <= authorized_amount
        AND refunded_amount >= 0 AND refund_pending_amount >= 0
        AND refunded_amount + refund_pending_amount <= captured_amount),
    CONSTRAINT transactions_merchant_account_id_id_key UNIQUE (merchant_account_id, id)
);

-- The list, newest first by (created_at, id), and its filters that are
-- selective enough for an index of their own.
CREATE INDEX transactions_list_idx ON transactions (merchant_account_id, created_at, id);
CREATE INDEX transactions_buyer_idx ON transactions (merchant_account_id, buyer_id, created_at, id) WHERE buyer_id IS NOT NULL;
CREATE INDEX transactions_payment_method_idx ON transactions (merchant_account_id, payment_method_id, created_at, id) WHERE payment_method_id IS NOT NULL;
CREATE INDEX transactions_external_identifier_idx ON transactions (merchant_account_id, external_identifier) WHERE external_identifier IS NOT NULL;

-- Captures. A row is written processing, its amount reserved on the
-- transaction (capture_pending_amount) in the same database transaction,
-- before the connector is called with its id as the idempotency
-- reference; the connector's answer settles it. A row still processing is
-- the record of a call whose answer is not known yet.
CREATE TABLE captures (
    id                         uuid PRIMARY KEY,
    merchant_account_id        text NOT NULL,
    transaction_id             uuid NOT NULL,
    amount                     bigint NOT NULL CHECK (amount BETWEEN 0 AND 99999999),
    status                     text NOT NULL CHECK (status IN ('processing', 'succeeded', 'declined', 'failed')),
    payment_service_capture_id text,
    error_code                 text,
    raw_response_code          text,
    raw_response_description   text,
    created_at                 timestamptz NOT NULL,
    updated_at                 timestamptz NOT NULL,
    FOREIGN KEY (merchant_account_id, transaction_id) REFERENCES transactions (merchant_account_id, id)
);

CREATE INDEX captures_transaction_idx ON captures (merchant_account_id, transaction_id, created_at, id);
CREATE INDEX captures_processing_idx ON captures (created_at) WHERE status = 'processing';

-- Refunds, written and settled as captures are (refund_pending_amount).
CREATE TABLE refunds (
    id                        uuid PRIMARY KEY,
    merchant_account_id       text NOT NULL,
    transaction_id            uuid NOT NULL,
    amount                    bigint NOT NULL CHECK (amount BETWEEN 1 AND 99999999),
    currency                  text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status                    text NOT NULL CHECK (status IN ('processing', 'succeeded', 'declined', 'failed')),
    reason                    text CHECK (char_length(reason) BETWEEN 1 AND 200),
    external_identifier       text CHECK (char_length(external_identifier) BETWEEN 1 AND 200),
    payment_service_refund_id text,
    error_code                text,
    raw_response_code         text,
    raw_response_description  text,
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL,
    FOREIGN KEY (merchant_account_id, transaction_id) REFERENCES transactions (merchant_account_id, id)
);

CREATE INDEX refunds_transaction_idx ON refunds (merchant_account_id, transaction_id, created_at, id);
CREATE INDEX refunds_processing_idx ON refunds (created_at) WHERE status = 'processing';

-- The history: one row per change, never updated or deleted. created_at
-- is the database's clock once the transaction's row was locked, so a
-- transaction's events sort in the order they happened.
CREATE TABLE transaction_events (
    id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    merchant_account_id      text NOT NULL,
    transaction_id           uuid NOT NULL,
    name                     text NOT NULL,
    status_before            text,
    status_after             text NOT NULL,
    amount                   bigint NOT NULL CHECK (amount >= 0),
    capture_id               uuid REFERENCES captures (id),
    refund_id                uuid REFERENCES refunds (id),
    raw_response_code        text,
    raw_response_description text,
    created_at               timestamptz NOT NULL,
    FOREIGN KEY (merchant_account_id, transaction_id) REFERENCES transactions (merchant_account_id, id)
);

CREATE INDEX transaction_events_list_idx ON transaction_events (merchant_account_id, transaction_id, created_at, id);

-- The runtime role's privileges on these tables: 008_runtime_role.sql
-- (the state tables are read, written and updated; the history is only
-- ever appended to).
