-- Payment services (docs/payment-services.md): a merchant account's
-- configurations of connectors. Credentials are never stored in the
-- clear: credentials_ciphertext is Vault transit ciphertext of the
-- credentials object (core-api/vaulttransit), bound to the row's merchant
-- account and id; credential_fields names the fields it holds, which is
-- all an answer says of them.
CREATE TABLE payment_services (
    id                     uuid PRIMARY KEY,
    -- The account's configurations go with it.
    merchant_account_id    text NOT NULL REFERENCES merchant_accounts (id) ON DELETE CASCADE,
    connector              text NOT NULL CHECK (connector ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
    method                 text NOT NULL CHECK (method ~ '^[a-z0-9][a-z0-9-]{0,31}$'),
    display_name           text CHECK (char_length(display_name) BETWEEN 1 AND 200),
    active                 boolean NOT NULL,
    is_default             boolean NOT NULL,
    settings               jsonb NOT NULL CHECK (jsonb_typeof(settings) = 'object'),
    credentials_ciphertext text NOT NULL CHECK (credentials_ciphertext LIKE 'vault:v%'),
    credential_fields      text[] NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    -- A deleted payment service is kept while transactions it authorized
    -- may still be captured, voided or refunded through it; it is gone
    -- from every read and from routing.
    deleted_at             timestamptz,
    -- The default must be usable: active and not deleted.
    CHECK (NOT is_default OR (active AND deleted_at IS NULL))
);

-- At most one default per merchant account and payment method.
CREATE UNIQUE INDEX payment_services_one_default ON payment_services (merchant_account_id, method) WHERE is_default;

-- The list: newest first, keyset on (created_at, id).
CREATE INDEX payment_services_list_idx ON payment_services (merchant_account_id, created_at, id) WHERE deleted_at IS NULL;

-- Updates change a configuration, mark one deleted, or move the default.
GRANT UPDATE ON payment_services TO payorch_core;
