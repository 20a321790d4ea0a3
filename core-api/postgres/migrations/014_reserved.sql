-- Number 014 is taken by a change developed alongside (processor
-- notifications and instant transfers); this empty file holds its place
-- so that 015 applies on its own, and gives way to that migration when
-- both are merged.
SELECT 1;
