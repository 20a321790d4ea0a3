-- Vault forward destinations: per merchant account, forwarding configs list
-- the hosts /vault-forward may reach (in production, the only ones) and
-- carry the advanced authentication methods (signature, mtls, mle).
CREATE TABLE forward_configs (
    id                  uuid PRIMARY KEY, -- UUIDv7: time-ordered, the list's keyset
    merchant_account_id text NOT NULL,
    display_name        text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX forward_configs_merchant ON forward_configs (merchant_account_id, id);

-- One row per allowed host ("host" or "host:port", lower case, validated
-- and normalised by the service before it gets here).
CREATE TABLE forward_config_hosts (
    config_id uuid NOT NULL REFERENCES forward_configs (id) ON DELETE CASCADE,
    position  int NOT NULL,
    host      text NOT NULL CHECK (host <> '' AND host = lower(host) AND host !~ '[/@ ]'),
    PRIMARY KEY (config_id, host)
);

-- Authentication methods. Credentials are stored exactly as entered, but
-- only sealed: every field (secret or not) is inside ciphertext, sealed by
-- the row's own record key under a data key wrapped by Vault transit, with
-- associated data binding merchant account and method id (a row copied to
-- another merchant or method does not open). field_keys and public_fields
-- hold the keys and the values of non-secret fields (certificates, public
-- keys, algorithm names) in the clear, for responses; a secret value (an
-- HMAC key, a private key) never appears outside ciphertext.
CREATE TABLE forward_auth_methods (
    id                  uuid PRIMARY KEY,
    config_id           uuid NOT NULL REFERENCES forward_configs (id) ON DELETE CASCADE,
    merchant_account_id text NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('signature', 'mtls', 'mle')),
    display_name        text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
    field_keys          text[] NOT NULL,
    public_fields       jsonb NOT NULL DEFAULT '{}',
    data_key_id         uuid NOT NULL REFERENCES data_keys (id),
    wrapped_record_key  bytea NOT NULL,
    ciphertext          bytea NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX forward_auth_methods_config ON forward_auth_methods (merchant_account_id, config_id, id);
CREATE INDEX forward_auth_methods_data_key ON forward_auth_methods (data_key_id);
