-- public_fields becomes json, which keeps its text as written, instead of
-- jsonb, which cannot hold the escape \u0000. Credentials are used exactly
-- as entered (docs/vault-forward-authentication.md), so a non-secret
-- value holding U+0000 must be stored, not refused by the database as a
-- 500. Nothing queries inside the column; it is only read back whole for
-- responses.
ALTER TABLE forward_auth_methods ALTER COLUMN public_fields TYPE json USING public_fields::json;
ALTER TABLE forward_auth_methods ALTER COLUMN public_fields SET DEFAULT '{}';
