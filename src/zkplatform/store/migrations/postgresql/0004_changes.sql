-- zkplatform schema 4 (PostgreSQL): the changes feed (ListChanges, WatchChanges).
-- The highest sequence of a tombstone purged from the vault: a changes cursor below
-- it may have missed a delete (CURSOR_EXPIRED). Raised by every purge, never lowered.
ALTER TABLE vaults ADD COLUMN purge_horizon BIGINT NOT NULL DEFAULT 0;

-- ListChanges reads a vault's items by the sequence of their latest change, from a
-- cursor on: a range scan of this index, whatever the length of the vault's history.
CREATE INDEX items_by_sequence ON items (vault_id, sequence);

-- Every statement that changes items announces, at its commit, each vault it changed
-- with its highest sequence, to every worker LISTENing on zk_changes (one connection
-- per worker): the watches of any host learn of a change within a round trip. A
-- trigger covers every writer (the use cases, the delete function, an operator's
-- import) without a round trip of its own; per statement, so an import of a million
-- items sends one notification per vault, not a million. Deletes (purges) are not
-- changes and announce nothing.
CREATE FUNCTION zk_announce_changes() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_notify('zk_changes', max(sequence)::text || ' ' || vault_id)
       FROM changed GROUP BY vault_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER items_inserted AFTER INSERT ON items
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION zk_announce_changes();

CREATE TRIGGER items_updated AFTER UPDATE ON items
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION zk_announce_changes();
