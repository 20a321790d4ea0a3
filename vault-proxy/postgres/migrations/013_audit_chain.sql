-- Tamper evidence for the audit trail: a hash chain over audit_events.
--
-- The runtime role can only add records (migration 012); this makes a
-- change by anyone else (the owner role, a superuser, someone with the
-- disk) visible to `vault-proxy audit verify`. Each record stores
--
--     chain_prev  the chain_hash of the record before it in the chain
--                 (32 zero bytes for the first), and
--     chain_hash  SHA-256(chain_prev || content),
--
-- where content is the record's nine columns occurred_at, actor,
-- merchant_account_id, action, tokens, purpose, outcome, request_id and
-- detail, in that order, each in binary COPY form: a 32-bit length, then
-- the type's binary value (what the shipper sends anyway; postgres/
-- auditchain.go). A record holds no card data (names, tokens, ids and
-- outcomes only), so an unkeyed hash reveals nothing.
--
-- audit_chain's one row is the chain's head: the last record's
-- chain_prev and chain_hash. Every append locks it, from reading the head
-- to the commit, so appends from every instance form one chain, in the
-- order of their ids: ids are taken while the lock is held (the identity
-- sequence must keep CACHE 1, or a session could hold back a range).
--
-- The chain starts here: the records stored before this migration (ids up
-- to started_after) are not in it, and every record stored after it must
-- carry its links (a constraint checked for new rows only). Instances of
-- an earlier build, still running while a deployment rolls out, cannot
-- store records any more: their shippers retry until the instance is
-- replaced (the records wait in its spool) and their card vaultings fail.
ALTER TABLE audit_events ADD COLUMN chain_prev bytea, ADD COLUMN chain_hash bytea;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_chained
    CHECK (chain_prev IS NOT NULL AND chain_hash IS NOT NULL
           AND octet_length(chain_prev) = 32 AND octet_length(chain_hash) = 32) NOT VALID;

CREATE TABLE audit_chain (
    only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    started_after bigint NOT NULL,
    prev          bytea NOT NULL CHECK (octet_length(prev) = 32),
    head          bytea NOT NULL CHECK (octet_length(head) = 32)
);
INSERT INTO audit_chain (started_after, prev, head)
SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('audit_events', 'id')), 0),
       '\x0000000000000000000000000000000000000000000000000000000000000000',
       '\x0000000000000000000000000000000000000000000000000000000000000000';
-- Appending moves the head. The runtime role could set it to anything;
-- the next record would then not follow the one before it, which verify
-- reports.
GRANT UPDATE ON audit_chain TO payorch_vault;
