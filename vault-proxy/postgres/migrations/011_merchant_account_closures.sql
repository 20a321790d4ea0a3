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
-- Re-creating a deleted id in core-api reopens it, if nothing is held
-- under it: from then on its audit trail starts above audit_floor (the
-- audit id sequence's last value at the reopening) and at reopened_at, so
-- the deleted account's events, including ones still in an instance's
-- audit spool at the time, are not the new account's.
--
-- Each close carries the id of core-api's deletion attempt. A deletion
-- that fails after its close cancels that attempt's closure, and only that
-- one: the attempt is recorded as cancelled, so a cancellation that arrives
-- late cannot undo a later deletion's closure, and a close that arrives
-- after its own cancellation is refused.
--
-- A reopening writes the row if there is none (an id deleted before this
-- table existed): attempt_id and closed_at are then NULL.
CREATE TABLE merchant_account_closures (
    merchant_account_id text PRIMARY KEY,
    closed              boolean NOT NULL,
    attempt_id          uuid,
    closed_at           timestamptz,
    reopened_at         timestamptz,
    audit_floor         bigint NOT NULL DEFAULT 0
);

CREATE TABLE merchant_account_cancelled_closures (
    attempt_id          uuid PRIMARY KEY,
    merchant_account_id text NOT NULL,
    cancelled_at        timestamptz NOT NULL DEFAULT now()
);
