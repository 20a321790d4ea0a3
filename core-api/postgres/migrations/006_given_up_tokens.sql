-- Tokens the vault reconciliation gave up (core-api/reconcile): vaulted
-- records that no payment method held a grace period after they were
-- vaulted, which vault-proxy is asked to crypto-shred. A row is written
-- only where no payment method has the id, under the transaction-scoped
-- advisory lock on the token that a payment method's creation also takes
-- (postgres.GiveUpToken, CreatePaymentMethod): from then on a payment
-- method is never created with the token, so a creation racing the
-- reconciliation either commits first (and the record is kept) or is
-- refused (and nothing refers to the shredded record). shredded_at is set
-- once vault-proxy has shredded the record (or found it gone); a row
-- without one is retried by the next run. Nothing here is card data.
CREATE TABLE given_up_tokens (
    id                  uuid PRIMARY KEY,
    merchant_account_id text NOT NULL,
    kind                text NOT NULL,
    vaulted_at          timestamptz NOT NULL,
    given_up_at         timestamptz NOT NULL DEFAULT now(),
    shredded_at         timestamptz
);
