-- zkplatform schema 3 (SQLite): the changes feed (ListChanges, WatchChanges).
-- The highest sequence of a tombstone purged from the vault: a changes cursor below
-- it may have missed a delete (CURSOR_EXPIRED). Raised by every purge, never lowered.
ALTER TABLE vaults ADD COLUMN purge_horizon INTEGER NOT NULL DEFAULT 0;

-- ListChanges reads a vault's items by the sequence of their latest change, from a
-- cursor on: a range scan of this index, whatever the length of the vault's history.
CREATE INDEX items_by_sequence ON items (vault_id, sequence);
