-- What each webhook attempt sent and got back (docs/webhooks.md,
-- "Delivery history"). The request's body is not here: it is the event's
-- payload (webhook_events.payload), the same on every attempt.
--
-- request_headers: as sent, the Basic credentials' Authorization
-- redacted. response_headers, response_body: the answer's, bounded by
-- core-api (at most 20 headers of 4 KiB in all, credentials redacted;
-- the body's first 4 KiB as UTF-8 text); NULL when no answer came
-- (response_code NULL).
ALTER TABLE webhook_attempts
    ADD COLUMN request_url             text,
    ADD COLUMN request_headers         jsonb,
    ADD COLUMN response_headers        jsonb,
    ADD COLUMN response_body           text CHECK (octet_length(response_body) <= 4096),
    ADD COLUMN response_body_truncated boolean NOT NULL DEFAULT false,
    ADD CHECK (response_code IS NOT NULL OR (response_headers IS NULL AND response_body IS NULL));
