-- The dashboard's idle timeout and its team management
-- (docs/dashboard.md).
--
-- last_seen_at: when the session was last used, written at most once a
-- minute per session, so a session idle longer than the idle timeout
-- ends before its absolute expiry. Sessions open before this migration
-- count as used when they were created.
ALTER TABLE dashboard_sessions ADD COLUMN last_seen_at timestamptz;
UPDATE dashboard_sessions SET last_seen_at = created_at;
ALTER TABLE dashboard_sessions ALTER COLUMN last_seen_at SET NOT NULL;

CREATE INDEX dashboard_sessions_user_idx ON dashboard_sessions (user_id);

-- core-api records a session's use, and an admin removes users (their
-- sessions go with them).
GRANT UPDATE ON dashboard_sessions TO payorch_core;
GRANT DELETE ON dashboard_users TO payorch_core;
