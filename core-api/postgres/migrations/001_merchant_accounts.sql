-- Every row in the core database belongs to one merchant account.
CREATE TABLE merchant_accounts (
    id           text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    display_name text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

INSERT INTO merchant_accounts (id, display_name) VALUES ('default', 'Default');
