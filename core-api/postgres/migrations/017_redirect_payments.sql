-- The sweep's scan for redirect payments whose reference expired while
-- their buyer was still deciding (postgres.DB.ExpiredApprovalTransactions).
CREATE INDEX transactions_approval_expiry_idx ON transactions (approval_expires_at)
    WHERE status = 'buyer_approval_pending' AND approval_expires_at IS NOT NULL;
