-- The record of a deleted merchant account's mandates. A revoked (or
-- failed) mandate outlives its payment method as the record of what
-- happened to it (migration 003), so it must not keep its account from
-- being deleted either; but mandates keeps its foreign key to the live
-- account, and a later account with the same id must not inherit the old
-- one's mandates. Deleting the account moves them here, in the same
-- transaction. account_created_at tells apart two accounts that had the
-- same id.
CREATE TABLE mandates_of_deleted_accounts (
    id                  text NOT NULL,
    merchant_account_id text NOT NULL, -- no foreign key: the account is gone
    account_created_at  timestamptz NOT NULL,
    account_deleted_at  timestamptz NOT NULL DEFAULT now(),
    payment_method_id   uuid NOT NULL,
    connector           text NOT NULL,
    scheme              text NOT NULL,
    status              text NOT NULL CHECK (status IN ('revoked', 'failed')),
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    revoked_at          timestamptz,
    PRIMARY KEY (merchant_account_id, account_created_at, id)
);
