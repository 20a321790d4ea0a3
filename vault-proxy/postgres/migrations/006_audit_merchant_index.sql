-- GET /audit-events reads a merchant account's events newest first by id
-- (WHERE merchant_account_id = $1 AND id < $cursor ORDER BY id DESC). The
-- index of 001 put occurred_at between the two, so it could not give that
-- order: PostgreSQL walked the primary key backwards through every other
-- merchant's events instead, and a quiet merchant's page cost a scan of the
-- whole table (16 ms at 110,000 rows, growing with the table). This index
-- answers the page directly. It is also a narrower key for the shipper to
-- maintain on every audit row.
--
-- On a large table this locks audit_events against writes while it builds:
-- requests are not affected (they write to the audit spool, which holds the
-- records until the shipper can store them).
CREATE INDEX audit_events_merchant_id ON audit_events (merchant_account_id, id DESC);
DROP INDEX audit_events_merchant_time;
