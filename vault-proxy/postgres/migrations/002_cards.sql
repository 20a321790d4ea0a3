-- Data keys: AES-256 keys wrapped by the Vault transit key. Only the wrapped
-- form is stored; key_version is the transit version that wrapped it, so a
-- rotation knows what is left to rewrap.
CREATE TABLE data_keys (
    id           uuid PRIMARY KEY,
    wrapped      text NOT NULL CHECK (wrapped LIKE 'vault:v%'),
    key_version  int NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    rewrapped_at timestamptz
);

CREATE INDEX data_keys_version ON data_keys (key_version, id);

-- Vaulted cards (and the other bearer numbers: gift cards with their PIN,
-- bank account numbers and IBANs): the token is the id (the payment method id in core-api).
-- The card number (and a gift card's PIN) exist only inside ciphertext,
-- sealed by the row's own record key, which is itself sealed by a data key.
-- Deleting the row destroys the record key: the card is crypto-shredded.
-- There is no column for a security code, by design (PCI DSS 3.3.1).
CREATE TABLE vaulted_cards (
    id                  uuid PRIMARY KEY,
    merchant_account_id text NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('card', 'gift-card', 'bank-account')),
    data_key_id         uuid NOT NULL REFERENCES data_keys (id),
    wrapped_record_key  bytea NOT NULL,
    ciphertext          bytea NOT NULL,
    fingerprint         text NOT NULL,
    scheme              text NOT NULL,
    card_type           text NOT NULL DEFAULT '',
    bin                 text NOT NULL CHECK (bin = '' OR bin ~ '^[0-9]{6,8}$'), -- '' for bank accounts
    last4               text NOT NULL CHECK (last4 ~ '^[0-9A-Z]{4}$'),
    expiration_date     text CHECK (expiration_date ~ '^(0[1-9]|1[0-2])/[0-9]{2}$'),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX vaulted_cards_fingerprint ON vaulted_cards (merchant_account_id, fingerprint);
CREATE INDEX vaulted_cards_data_key ON vaulted_cards (data_key_id);
