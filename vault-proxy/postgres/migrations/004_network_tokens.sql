-- Network tokens (vault-proxy/networktoken): scheme tokens (DPANs) that a
-- token service provider issued for a vaulted card. The token value is a
-- payment credential: it exists only inside ciphertext, sealed like a card
-- number (its own record key under a data key wrapped by Vault transit),
-- with associated data binding merchant account, payment method and network
-- token id. last4 and the expiry are the only parts in the clear.
--
-- A deleted token keeps its row (status 'deleted', for the list and the
-- audit trail) but loses its ciphertext and record key: crypto-shredded.
-- Deleting the payment method deletes its network tokens with it.
-- Cryptograms are one-time values and have no column.
CREATE TABLE network_tokens (
    id                  uuid PRIMARY KEY, -- UUIDv7: time-ordered
    merchant_account_id text NOT NULL,
    payment_method_id   uuid NOT NULL REFERENCES vaulted_cards (id) ON DELETE CASCADE,
    provider            text NOT NULL CHECK (provider <> ''),
    scheme              text NOT NULL,
    tsp_reference       text NOT NULL CHECK (tsp_reference <> ''),
    status              text NOT NULL CHECK (status IN ('active', 'suspended', 'deleted')),
    expiration_date     text NOT NULL CHECK (expiration_date ~ '^(0[1-9]|1[0-2])/[0-9]{2}$'),
    last4               text NOT NULL CHECK (last4 ~ '^[0-9]{4}$'),
    data_key_id         uuid REFERENCES data_keys (id),
    wrapped_record_key  bytea,
    ciphertext          bytea,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- Only a deleted token has no value, and it has none at all.
    CONSTRAINT network_tokens_sealed CHECK (
        (status = 'deleted' AND data_key_id IS NULL AND wrapped_record_key IS NULL AND ciphertext IS NULL) OR
        (status <> 'deleted' AND data_key_id IS NOT NULL AND wrapped_record_key IS NOT NULL AND ciphertext IS NOT NULL))
);

-- At most one token that is not deleted per payment method: two first uses
-- racing each other store one token.
CREATE UNIQUE INDEX network_tokens_current ON network_tokens (payment_method_id) WHERE status <> 'deleted';
CREATE INDEX network_tokens_payment_method ON network_tokens (merchant_account_id, payment_method_id, id);
CREATE INDEX network_tokens_data_key ON network_tokens (data_key_id);
