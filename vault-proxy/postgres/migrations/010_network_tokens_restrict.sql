-- A card is deleted only after its network tokens were deleted at their
-- token service (docs/network-tokens.md). The row of a live token is the
-- only record of a credential the scheme still honours: deleting it with
-- the card (ON DELETE CASCADE, migration 004) left a token that a racing
-- provisioning had stored live at its TSP with nothing to name it. The
-- database now refuses to delete a card that still has any network token;
-- postgres.DeleteCard removes the rows of deleted ones (metadata only) in
-- the transaction that deletes the card, and refuses while a live one is
-- there.
--
-- The rows already satisfy the key (they had it); checking them again locks
-- network_tokens against writes for one scan of the table.
ALTER TABLE network_tokens DROP CONSTRAINT network_tokens_payment_method_id_fkey;
ALTER TABLE network_tokens ADD CONSTRAINT network_tokens_payment_method_id_fkey
    FOREIGN KEY (payment_method_id) REFERENCES vaulted_cards (id) ON DELETE RESTRICT;
