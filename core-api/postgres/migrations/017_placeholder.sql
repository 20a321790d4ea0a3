-- Placeholder for migration 017, which another branch owns: the migrator
-- needs consecutive numbers. The merge replaces this file with that
-- branch's migration 017.
SELECT 1;
