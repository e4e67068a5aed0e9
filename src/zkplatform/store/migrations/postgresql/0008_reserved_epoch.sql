-- zkplatform schema 8 (PostgreSQL): reserved, and empty. This number belongs to the migration
-- of cursor epochs (issue 29), made on another branch at the same time as the key directory's
-- (0009): the migrations must be numbered without gaps. When that branch is merged, its 0008
-- takes this file's place, and this file goes.
SELECT 1;
