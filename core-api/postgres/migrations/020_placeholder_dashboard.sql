-- Placeholder for migration 020, which another branch owns: the migrator
-- needs consecutive numbers. The merge drops this file.
SELECT 1;
