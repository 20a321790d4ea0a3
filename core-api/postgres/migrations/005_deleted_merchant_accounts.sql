-- The ids of deleted merchant accounts. vault-proxy closes an account's id
-- in the vault zone when core-api deletes it (it then stores nothing new
-- for the id, and a later account of the same id does not read the deleted
-- one's audit trail); creating an account whose id is listed here reopens
-- the id there first, in the transaction that creates it. An id never
-- deleted needs no call to vault-proxy.
CREATE TABLE deleted_merchant_accounts (
    id                 text NOT NULL,
    account_created_at timestamptz NOT NULL,
    deleted_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id, account_created_at)
);

-- Accounts deleted before this table existed are known only by the
-- revoked or failed mandates they left behind; the others are not known as deleted, and
-- their ids reused do not reopen (docs/api-conventions.md).
INSERT INTO deleted_merchant_accounts (id, account_created_at, deleted_at)
SELECT merchant_account_id, account_created_at, min(account_deleted_at)
FROM mandates_of_deleted_accounts
GROUP BY merchant_account_id, account_created_at;
