-- A transaction's installment_count is 1 to 100, as the API takes it.
ALTER TABLE transactions DROP CONSTRAINT transactions_installment_count_check,
    ADD CONSTRAINT transactions_installment_count_check CHECK (installment_count BETWEEN 1 AND 100);
