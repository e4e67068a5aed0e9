-- zkplatform schema 7 (PostgreSQL): request ids (AIP-155).
-- A write that succeeds with a request id records, in its own transaction, what it asked
-- (the SHA-256 fingerprint of its method and request) and what it answered, so that a
-- repeat of it by the same principal within 24 hours answers the same and changes
-- nothing. The answer is a change of an item, in the columns of `items` (NULL
-- otherwise), or token ids, space-separated: the one a mint minted (never its secret),
-- those a revocation revoked (possibly none: '').
--
-- A call with a request id inserts its row first, before it changes anything (a claim,
-- its answer NULL), and sets the answer when it succeeds or deletes the row when it
-- fails, in the same transaction: a concurrent call with the same id waits on the
-- primary key for that commit, then reads the record. A committed row always holds an
-- answer.
CREATE TABLE request_ids (
    principal_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    fingerprint BYTEA NOT NULL,
    recorded_at BIGINT NOT NULL,
    vault_id TEXT,
    item_id TEXT,
    tenant_id TEXT,
    version BIGINT,
    kind TEXT,
    title_hash TEXT,
    updated_at BIGINT,
    payload TEXT,
    wrapped_keys TEXT,
    deleted BOOLEAN,
    sequence BIGINT,
    token_ids TEXT,
    PRIMARY KEY (principal_id, request_id)
);

-- The purge of tombstones forgets the records past 24 hours.
CREATE INDEX request_ids_by_time ON request_ids (recorded_at);

-- A delete erases the item's content from the answers recorded of it, as from the item.
CREATE INDEX request_ids_by_item ON request_ids (vault_id, item_id);

-- DeleteItem's compare-and-set (schema 5), still one round trip, now also erasing the
-- item's content from the answers recorded of it (a create's, an update's), so that
-- nothing decryptable stays. `p_kept_since`: records made before it answer nothing any
-- more. Those still kept are deleted, waiting for a lock if need be (only a call reading
-- one as a repeat holds one, and it takes no lock after it). Older ones are deleted unless
-- locked: a call that reuses their id holds them, overwrites their answer itself, and may
-- wait for this item; waiting for it here could close a circle.
DROP FUNCTION zk_delete_item(TEXT, TEXT, BIGINT, BIGINT, BYTEA);
CREATE FUNCTION zk_delete_item(
    p_vault TEXT, p_item TEXT, p_base_version BIGINT, p_now BIGINT, p_event BYTEA, p_kept_since BIGINT
)
RETURNS SETOF items
LANGUAGE plpgsql
AS $$
DECLARE
    next_sequence BIGINT;
    vault_tenant TEXT;
BEGIN
    UPDATE items
       SET deleted = true, version = version + 1, updated_at = p_now,
           title_hash = '', payload = NULL, wrapped_keys = '[]'
     WHERE vault_id = p_vault AND item_id = p_item AND version = p_base_version AND NOT deleted;
    IF FOUND THEN
        UPDATE vaults SET sequence = sequence + 1 WHERE vault_id = p_vault
        RETURNING sequence, tenant_id INTO next_sequence, vault_tenant;
        DELETE FROM request_ids
         WHERE vault_id = p_vault AND item_id = p_item AND NOT deleted AND recorded_at >= p_kept_since;
        DELETE FROM request_ids
         WHERE ctid IN (SELECT ctid FROM request_ids
                         WHERE vault_id = p_vault AND item_id = p_item AND NOT deleted
                           AND recorded_at < p_kept_since
                           FOR UPDATE SKIP LOCKED);
        PERFORM zk_audit_append(vault_tenant, p_event);
        RETURN QUERY
            UPDATE items SET sequence = next_sequence
             WHERE vault_id = p_vault AND item_id = p_item
            RETURNING items.*;
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM items WHERE vault_id = p_vault AND item_id = p_item;
END
$$;
