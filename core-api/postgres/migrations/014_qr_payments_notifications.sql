-- Instant bank transfers paid by QR code (pix) and processors'
-- notifications (docs/notifications.md).

-- What the buyer pays a pix payment with, and until when: the expiry job
-- fails it after approval_expires_at.
ALTER TABLE transactions ADD COLUMN qr_code text CHECK (char_length(qr_code) <= 2048),
    ADD COLUMN approval_expires_at timestamptz;

-- The expiry job's scan: pix payments waiting for their transfer.
CREATE INDEX transactions_qr_expiry_idx ON transactions (approval_expires_at)
    WHERE status = 'capture_pending' AND approval_expires_at IS NOT NULL;

-- A processor's notification recorded as an event: its id (the same on
-- each of the processor's retries, which the unique index records once),
-- its headers (less credentials) and its body as received.
ALTER TABLE transaction_events ADD COLUMN notification_connector text,
    ADD COLUMN notification_id text CHECK (char_length(notification_id) BETWEEN 1 AND 255),
    ADD COLUMN raw_headers jsonb,
    ADD COLUMN raw_body text,
    ADD CONSTRAINT transaction_events_notification_check CHECK ((notification_id IS NULL) = (notification_connector IS NULL));
CREATE UNIQUE INDEX transaction_events_notification_idx
    ON transaction_events (merchant_account_id, transaction_id, notification_connector, notification_id)
    WHERE notification_id IS NOT NULL;
