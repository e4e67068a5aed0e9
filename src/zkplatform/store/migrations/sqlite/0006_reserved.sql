-- zkplatform schema 6 (SQLite): reserved, and empty. This number belongs to the migration of
-- request ids (issue 29), made on another branch at the same time as the epoch's (0007): the
-- migrations must be numbered without gaps. When that branch is merged, its 0006 takes this
-- file's place, and this file goes.
SELECT 1;
