-- Buyers: a merchant account's customers. Lists read them newest first by
-- the keyset (created_at, id) within one merchant account.
CREATE TABLE buyers (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    merchant_account_id text NOT NULL REFERENCES merchant_accounts(id),
    display_name        text CHECK (char_length(display_name) BETWEEN 1 AND 200),
    external_identifier text CHECK (char_length(external_identifier) BETWEEN 1 AND 200),
    account_number      text CHECK (char_length(account_number) BETWEEN 1 AND 200),
    billing_details     jsonb CHECK (billing_details IS NULL OR jsonb_typeof(billing_details) = 'object'),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- 409 duplicate_record names this constraint; NULLs never collide.
    CONSTRAINT buyers_external_identifier_key UNIQUE (merchant_account_id, external_identifier),
    -- Lets other tables reference (merchant_account_id, buyer_id) so a row
    -- can never point at another account's buyer.
    CONSTRAINT buyers_merchant_account_id_id_key UNIQUE (merchant_account_id, id)
);

-- The list query: WHERE merchant_account_id = $1 AND (created_at, id) < (...)
-- ORDER BY created_at DESC, id DESC LIMIT n.
CREATE INDEX buyers_list_idx ON buyers (merchant_account_id, created_at, id);

-- The merchant account list uses the same keyset.
CREATE INDEX merchant_accounts_list_idx ON merchant_accounts (created_at, id);
