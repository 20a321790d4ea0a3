-- Sandbox 3-D Secure scenarios (docs/three-d-secure.md): a merchant
-- account's ordered rules for the 3-D Secure simulator. priority is the
-- rule's 1-based place in evaluation order, contiguous per account; every
-- change of order takes the account's advisory lock
-- (three_ds_scenarios:<account>) and the unique constraint, checked at
-- commit, makes two rules at one place impossible even so.
--
-- No card number is stored here, nor anything derived from one but the
-- display data a card may show: vault-proxy keeps a card_number
-- condition's number, vaulted as a record no payment method holds, and
-- core-api keeps that record's reference (card_condition_id, one
-- scenario's only: deleting the scenario or replacing its condition
-- shreds the record) with the card's first 6 digits and last 4. The
-- simulator, in the PCI zone, compares the numbers.
CREATE TABLE three_ds_scenarios (
    id                    uuid PRIMARY KEY,
    merchant_account_id   text NOT NULL REFERENCES merchant_accounts (id) ON DELETE CASCADE,
    priority              integer NOT NULL CHECK (priority > 0),
    first_name            text CHECK (char_length(first_name) BETWEEN 1 AND 200),
    last_name             text CHECK (char_length(last_name) BETWEEN 1 AND 200),
    email_address         text CHECK (char_length(email_address) BETWEEN 1 AND 320),
    amount                bigint CHECK (amount >= 0),
    external_identifier   text CHECK (char_length(external_identifier) BETWEEN 1 AND 200),
    card_condition_id     uuid UNIQUE,
    card_condition_bin    text CHECK (card_condition_bin ~ '^[0-9]{6}$'),
    card_condition_last4  text CHECK (card_condition_last4 ~ '^[0-9]{4}$'),
    bin                   text CHECK (bin ~ '^[0-9]{1,8}$'),
    version               text NOT NULL,
    authentication_status text NOT NULL CHECK (authentication_status IN ('Y', 'N', 'A', 'R', 'U', 'C', 'timeout')),
    -- The challenge's result: there when, and only when, authentication is C.
    result_status         text CHECK (result_status IN ('Y', 'N', 'timeout')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CHECK ((authentication_status = 'C') = (result_status IS NOT NULL)),
    CHECK ((card_condition_id IS NULL) = (card_condition_bin IS NULL) AND (card_condition_id IS NULL) = (card_condition_last4 IS NULL)),
    CONSTRAINT three_ds_scenarios_one_per_priority UNIQUE (merchant_account_id, priority) DEFERRABLE INITIALLY DEFERRED
);

-- Rules are edited, reordered and deleted.
GRANT UPDATE, DELETE ON three_ds_scenarios TO payorch_core;

-- A transaction's 3-D Secure summary (coreapi.ThreeDSecure as JSON: the
-- version, status, method, amount, the CAVV and ECI, and while a
-- challenge waits for the buyer the result completing it gives); NULL
-- when the payment asked for none.
ALTER TABLE transactions ADD COLUMN three_d_secure jsonb CHECK (jsonb_typeof(three_d_secure) = 'object');

-- The sweep fails the challenges not completed before their expiry
-- (approval_expires_at).
CREATE INDEX transactions_challenge_expiry_idx ON transactions (approval_expires_at)
    WHERE status = 'buyer_approval_pending' AND three_d_secure IS NOT NULL;

-- A transaction's anti-fraud decision (docs/anti-fraud.md); NULL when no
-- anti-fraud service screened it.
ALTER TABLE transactions ADD COLUMN anti_fraud_decision text
    CHECK (anti_fraud_decision IN ('accept', 'reject', 'review', 'error', 'skipped'));
