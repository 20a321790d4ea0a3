-- Placeholder for migration 016, which another branch owns: the migrator
-- needs consecutive numbers. The merge replaces this file with that
-- branch's migration 016.
SELECT 1;
