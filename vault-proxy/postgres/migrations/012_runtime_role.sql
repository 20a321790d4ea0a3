-- vault-proxy serves as the runtime role payorch_vault; the database and
-- everything in it belong to payorch_vault_owner, which runs these
-- migrations (`vault-proxy migrate`, at deploy time) and which no running
-- instance holds (shared/pgsetup). The runtime role cannot change the
-- schema, and holds on each table only what this file and later
-- migrations grant it.
--
-- The convention, for every table from here on: the runtime role may read
-- a new table and add rows to it (the default privileges below), and
-- nothing more. A table whose rows vault-proxy changes or removes says so
-- in the migration that creates it:
--
--     GRANT UPDATE, DELETE ON t TO payorch_vault;
--
-- A history table (audit_events) takes no such line: what the service
-- wrote there stays as it wrote it. TRUNCATE, REFERENCES and TRIGGER are
-- never granted.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT ON TABLES TO payorch_vault;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO payorch_vault;

-- The tables before this file. vault_schema_version is the migrations'
-- own record (pgmigrate): the service reads it at start, never writes it.
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO payorch_vault;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO payorch_vault;
REVOKE INSERT ON vault_schema_version FROM payorch_vault;
GRANT UPDATE, DELETE ON data_keys, vaulted_cards, forward_configs, forward_config_hosts, forward_auth_methods,
    network_tokens, audit_spool_checkpoints, merchant_account_closures, merchant_account_cancelled_closures
    TO payorch_vault;
