-- zkplatform schema 5 (PostgreSQL): the audit trail.
-- Each tenant's events form a hash chain (see domain/audit.py): `event` holds the
-- exact bytes that were hashed, `hash` = SHA-256(previous event's hash || event).
CREATE TABLE audit_events (
    tenant_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    event BYTEA NOT NULL,
    hash BYTEA NOT NULL,
    PRIMARY KEY (tenant_id, sequence)
);

-- Where each tenant's chain ends: the next event continues from here, and a
-- verification that stops short of it knows events were removed from the end.
CREATE TABLE audit_heads (
    tenant_id TEXT PRIMARY KEY,
    sequence BIGINT NOT NULL,
    hash BYTEA NOT NULL
);

-- Append one event to its tenant's chain, in the caller's transaction. The head's row
-- is locked from here to the commit: events of one tenant queue, other tenants' do not.
-- A transaction locks its heads last and in tenant order (the store sorts its events),
-- after the rows it changes, so two transactions never wait for each other in a circle.
CREATE FUNCTION zk_audit_append(p_tenant TEXT, p_event BYTEA)
RETURNS BIGINT
LANGUAGE plpgsql
AS $$
DECLARE
    appended BIGINT;
    chained BYTEA;
BEGIN
    INSERT INTO audit_heads AS h (tenant_id, sequence, hash)
         VALUES (p_tenant, 1, sha256(decode(repeat('00', 32), 'hex') || p_event))
    ON CONFLICT (tenant_id) DO UPDATE SET sequence = h.sequence + 1, hash = sha256(h.hash || p_event)
    RETURNING sequence, hash INTO appended, chained;
    INSERT INTO audit_events (tenant_id, sequence, event, hash) VALUES (p_tenant, appended, p_event, chained);
    RETURN appended;
END
$$;

-- DeleteItem's compare-and-set (schema 2) with its audit event, still one round trip.
-- The event's bytes come from the caller: only a delete that applies appends them.
-- The function without the event goes: no delete can skip the trail.
DROP FUNCTION zk_delete_item(TEXT, TEXT, BIGINT, BIGINT);
CREATE FUNCTION zk_delete_item(p_vault TEXT, p_item TEXT, p_base_version BIGINT, p_now BIGINT, p_event BYTEA)
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
