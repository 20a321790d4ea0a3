-- The vault zone's record of merchant accounts deleted in core-api.
-- vault-proxy does not own merchant accounts, but it holds secrets and an
-- audit trail under their ids; without this, a later account created with
-- a deleted one's id inherited what the vault zone still had under that id.
--
-- A closure is written in the transaction that finds the account holds
-- nothing here (postgres.CloseMerchantAccount), under an advisory lock on
-- the id that the inserts of cards and forwarding configs also take (the
-- other holdings, authentication methods and network tokens, belong to
-- one of those), so nothing can be stored between the count and the
-- closure, and nothing is stored for a closed account after it.
-- Re-creating the id in core-api reopens it, if nothing is held under it:
-- from then on its audit trail starts above audit_floor (the audit id
-- sequence's last value at the reopening) and at reopened_at, so the
-- deleted account's events, including ones still in an instance's audit
-- spool at the time, are not the new account's.
CREATE TABLE merchant_account_closures (
    merchant_account_id text PRIMARY KEY,
    closed              boolean NOT NULL,
    closed_at           timestamptz NOT NULL,
    reopened_at         timestamptz,
    audit_floor         bigint NOT NULL DEFAULT 0
);
