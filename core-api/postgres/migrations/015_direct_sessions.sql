-- A direct (client SDK) integration's session: the client it was created
-- for and the digest of the session token answered with the transaction,
-- which POST /transactions/{id}/session exchanges once for the session
-- data (exchanged_at set in the same statement that checks it is null).
-- The token itself is never stored.
CREATE TABLE direct_sessions (
    transaction_id      uuid PRIMARY KEY REFERENCES transactions (id),
    merchant_account_id text NOT NULL,
    integration_client  text NOT NULL CHECK (integration_client IN ('web', 'ios', 'android')),
    session_token_hash  bytea NOT NULL CHECK (length(session_token_hash) = 32),
    created_at          timestamptz NOT NULL DEFAULT now(),
    exchanged_at        timestamptz
);

GRANT UPDATE ON direct_sessions TO payorch_core;
