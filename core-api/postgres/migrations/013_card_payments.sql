-- A card given in full with a payment (vault-proxy's POST /transactions)
-- becomes a payment method that is not stored: it serves that payment's
-- captures, voids and refunds, but is neither listed among the merchant's
-- and buyer's payment methods nor taken for another payment, until the
-- payment stores it. Every payment method created before was stored.
ALTER TABLE payment_methods ADD COLUMN stored boolean NOT NULL DEFAULT true;

-- A transaction's "store": its approved authorization stores its payment
-- method and records the scheme transaction id on it, whenever the answer
-- is settled (at once, or later after a lost answer).
ALTER TABLE transactions ADD COLUMN store boolean NOT NULL DEFAULT false;
