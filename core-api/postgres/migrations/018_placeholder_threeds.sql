-- Placeholder keeping the numbering contiguous (tern refuses gaps) on the
-- threeds branch: migration 018 belongs to another branch and replaces
-- this file when they are merged.
SELECT 1;
