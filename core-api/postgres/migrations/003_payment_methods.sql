-- Stored payment methods. The id is vault-proxy's token: the card, gift
-- card or bank account number itself lives only in the vault database.
-- Nothing here is cardholder data: last 4, BIN, expiry, keyed fingerprint.
CREATE TABLE payment_methods (
    id                           uuid PRIMARY KEY,
    merchant_account_id          text NOT NULL REFERENCES merchant_accounts (id),
    method                       text NOT NULL CHECK (method IN ('card', 'gift-card', 'bank')),
    status                       text NOT NULL DEFAULT 'succeeded',
    scheme                       text NOT NULL,
    label                        text NOT NULL CHECK (label ~ '^[0-9A-Z]{0,4}$'),
    bin                          text CHECK (bin ~ '^[0-9]{6,8}$'),
    card_type                    text,
    expiration_date              text CHECK (expiration_date ~ '^(0[1-9]|1[0-2])/[0-9]{2}$'),
    fingerprint                  text,
    country                      text CHECK (country ~ '^[A-Z]{2}$'),
    currency                     text CHECK (currency ~ '^[A-Z]{3}$'),
    bank_details                 jsonb,
    buyer_id                     uuid REFERENCES buyers (id) ON DELETE SET NULL,
    external_identifier          text CHECK (length(external_identifier) BETWEEN 1 AND 200),
    scheme_transaction_id        text,
    scheme_transaction_id_scheme text,
    last_used_at                 timestamptz,
    usage_count                  bigint NOT NULL DEFAULT 0 CHECK (usage_count >= 0),
    cit_last_used_at             timestamptz,
    cit_usage_count              bigint NOT NULL DEFAULT 0 CHECK (cit_usage_count >= 0),
    created_at                   timestamptz NOT NULL DEFAULT now(),
    updated_at                   timestamptz NOT NULL DEFAULT now(),
    CHECK (method <> 'bank' OR (country IS NOT NULL AND currency IS NOT NULL AND bank_details IS NOT NULL))
);

-- Keyset pagination of a merchant's list (newest first), optionally by buyer.
CREATE INDEX payment_methods_merchant_created ON payment_methods (merchant_account_id, created_at DESC, id DESC);
CREATE INDEX payment_methods_buyer ON payment_methods (merchant_account_id, buyer_id, created_at DESC, id DESC) WHERE buyer_id IS NOT NULL;

-- Bank debit mandates set up through a connector. A mandate outlives its
-- payment method (status revoked, revoked_at set) as the record that it was
-- revoked, so payment_method_id is not a foreign key.
CREATE TABLE mandates (
    id                  text PRIMARY KEY,
    merchant_account_id text NOT NULL REFERENCES merchant_accounts (id),
    payment_method_id   uuid NOT NULL,
    connector           text NOT NULL,
    scheme              text NOT NULL CHECK (scheme IN ('ach', 'sepa', 'bacs')),
    status              text NOT NULL CHECK (status IN ('pending', 'active', 'revoked', 'failed')),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    revoked_at          timestamptz
);

CREATE INDEX mandates_payment_method ON mandates (merchant_account_id, payment_method_id);
