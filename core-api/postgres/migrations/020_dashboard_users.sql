-- The merchant dashboard's users and their sessions (docs/dashboard.md).
--
-- dashboard_users: people who sign in to the dashboard of this instance.
-- password_hash is an argon2id PHC string; merchant_account_ids lists
-- the accounts the user may act in, or is {'*'} for every one. A run of
-- failed sign-ins locks the user out until locked_until.
CREATE TABLE dashboard_users (
    id                   uuid PRIMARY KEY,
    email                text NOT NULL UNIQUE CHECK (char_length(email) BETWEEN 3 AND 254 AND email = lower(email)),
    password_hash        text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    role                 text NOT NULL CHECK (role IN ('admin', 'developer', 'viewer')),
    merchant_account_ids text[] NOT NULL CHECK (cardinality(merchant_account_ids) >= 1),
    failed_sign_ins      integer NOT NULL DEFAULT 0,
    locked_until         timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- dashboard_sessions: one per sign-in. The cookie holds a random token;
-- only its SHA-256 is stored, so a read of this table signs nobody in.
-- csrf_token is the session's anti-CSRF token, sent back in a header on
-- every state-changing request.
CREATE TABLE dashboard_sessions (
    token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    user_id    uuid NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE INDEX dashboard_sessions_expiry_idx ON dashboard_sessions (expires_at);

GRANT UPDATE ON dashboard_users TO payorch_core;
GRANT DELETE ON dashboard_sessions TO payorch_core;
