-- core-api serves as the runtime role payorch_core; the database and
-- everything in it belong to payorch_core_owner, which runs these
-- migrations (`core-api migrate`, at deploy time) and which no running
-- instance holds (shared/pgsetup). The runtime role cannot change the
-- schema, and holds on each table only what this file and later
-- migrations grant it.
--
-- The convention, for every table from here on: the runtime role may read
-- a new table and add rows to it (the default privileges below), and
-- nothing more. A table whose rows core-api changes or removes says so in
-- the migration that creates it:
--
--     GRANT UPDATE, DELETE ON t TO payorch_core;
--
-- A history table (a transaction's events, say) takes no such line: what
-- the service wrote there stays as it wrote it. TRUNCATE, REFERENCES and
-- TRIGGER are never granted.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT ON TABLES TO payorch_core;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO payorch_core;

-- The tables before this file. core_schema_version is the migrations' own
-- record (pgmigrate): the service reads it at start, never writes it.
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO payorch_core;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO payorch_core;
REVOKE INSERT ON core_schema_version FROM payorch_core;
GRANT UPDATE, DELETE ON merchant_accounts, buyers, payment_methods, mandates, mandates_of_deleted_accounts,
    deleted_merchant_accounts
    TO payorch_core;
-- A given-up token is marked shredded; transactions, captures and refunds
-- are settled in place and never deleted. transaction_events is history:
-- SELECT and INSERT only.
GRANT UPDATE ON given_up_tokens, transactions, captures, refunds TO payorch_core;
