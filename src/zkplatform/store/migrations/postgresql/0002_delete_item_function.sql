-- zkplatform schema 2 (PostgreSQL): DeleteItem's compare-and-set in one round trip.
-- The same statements the store used to send one by one, in the same order; in a
-- plpgsql function each statement still takes a fresh READ COMMITTED snapshot, so
-- a concurrent delete of the same item behaves exactly as before: it waits for the
-- first, re-checks NOT deleted, changes nothing and answers the committed tombstone.
CREATE FUNCTION zk_delete_item(p_vault TEXT, p_item TEXT, p_base_version BIGINT, p_now BIGINT)
RETURNS SETOF items
LANGUAGE plpgsql
AS $$
DECLARE
    next_sequence BIGINT;
BEGIN
    UPDATE items
       SET deleted = true, version = version + 1, updated_at = p_now,
           title_hash = '', payload = NULL, wrapped_keys = '[]'
     WHERE vault_id = p_vault AND item_id = p_item AND version = p_base_version AND NOT deleted;
    IF FOUND THEN
        -- Only a change takes a sequence number.
        UPDATE vaults SET sequence = sequence + 1 WHERE vault_id = p_vault RETURNING sequence INTO next_sequence;
        RETURN QUERY
            UPDATE items SET sequence = next_sequence
             WHERE vault_id = p_vault AND item_id = p_item
            RETURNING items.*;
        RETURN;
    END IF;
    -- Nothing changed: describe the row as committed, whoever deleted it.
    RETURN QUERY SELECT * FROM items WHERE vault_id = p_vault AND item_id = p_item;
END
$$;
