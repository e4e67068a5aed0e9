"""The SQL both SQL stores run, written once with `?` placeholders and rendered per dialect.

What differs between the dialects beyond the placeholder (boolean tests that must
match a partial index, arrays, row locks, the delete function) stays in its adapter.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from zkplatform.store import rows


def _values(count: int) -> str:
    return "(" + ", ".join("?" * count) + ")"


def _record_request() -> str:
    """Record a call's answer under its request id, over a record of that id made before
    (principal, request id, fingerprint, now, the answer's columns, oldest kept): a record made
    at or after `oldest kept` stays as it is, and nothing is returned."""
    columns = f"principal_id, request_id, fingerprint, recorded_at, {rows.ANSWER_COLUMNS}"
    overwritten = ", ".join(f"{c} = excluded.{c}" for c in columns.split(", ")[2:])
    return (
        f"INSERT INTO request_ids ({columns}) VALUES {_values(len(columns.split(', ')))}"
        f" ON CONFLICT (principal_id, request_id) DO UPDATE SET {overwritten}"
        " WHERE request_ids.recorded_at < ? RETURNING 1"
    )


def _list_items(condition: str) -> str:
    return (
        f"SELECT {rows.ITEM_COLUMNS} FROM items WHERE vault_id = ? AND item_id > ?{condition} ORDER BY item_id LIMIT ?"
    )


@dataclass(frozen=True, slots=True)
class Statements:
    schema_version: str = "SELECT version FROM schema_version"
    clear_schema_version: str = "DELETE FROM schema_version"
    set_schema_version: str = "INSERT INTO schema_version (version) VALUES (?)"

    add_tenant: str = "INSERT INTO tenants VALUES (?)"
    tenant_exists: str = "SELECT 1 FROM tenants WHERE tenant_id = ?"
    add_principal: str = "INSERT INTO principals (principal_id, tenant_id, role, allowed_scopes) VALUES (?, ?, ?, ?)"
    principal_exists: str = "SELECT 1 FROM principals WHERE principal_id = ?"
    principal_in_tenant: str = "SELECT 1 FROM principals WHERE principal_id = ? AND tenant_id = ?"
    get_principal: str = f"SELECT {rows.PRINCIPAL_COLUMNS} FROM principals WHERE principal_id = ?"
    add_vault: str = "INSERT INTO vaults (vault_id, tenant_id) VALUES (?, ?)"
    add_vault_member: str = "INSERT INTO vault_members VALUES (?, ?)"
    remove_vault_member: str = "DELETE FROM vault_members WHERE vault_id = ? AND principal_id = ?"
    is_vault_member: str = "SELECT 1 FROM vault_members WHERE vault_id = ? AND principal_id = ?"
    vault_tenant: str = "SELECT tenant_id FROM vaults WHERE vault_id = ?"
    list_tenants: str = "SELECT tenant_id FROM tenants ORDER BY tenant_id"
    list_principals: str = f"SELECT {rows.PRINCIPAL_COLUMNS} FROM principals WHERE tenant_id = ? ORDER BY principal_id"
    list_vaults: str = "SELECT vault_id FROM vaults WHERE tenant_id = ? ORDER BY vault_id"
    list_vault_members: str = (
        "SELECT m.vault_id, m.principal_id FROM vault_members m JOIN vaults v ON v.vault_id = m.vault_id"
        " WHERE v.tenant_id = ?"
    )
    # The vaults a principal is a member of after a vault id, each with every member, a row a member:
    # (principal, after, limit). vault_members_by_principal finds the page's vaults (a range of
    # it, in order), the primary key their members.
    member_vaults: str = (
        "SELECT v.vault_id, v.tenant_id, m.principal_id FROM vaults v JOIN vault_members m ON m.vault_id = v.vault_id"
        " WHERE v.vault_id IN (SELECT vault_id FROM vault_members WHERE principal_id = ? AND vault_id > ?"
        " ORDER BY vault_id LIMIT ?) ORDER BY v.vault_id"
    )
    principal_disabled: str = "SELECT disabled FROM principals WHERE principal_id = ?"
    principal_tenant: str = "SELECT tenant_id FROM principals WHERE principal_id = ?"
    set_principal_disabled: str = "UPDATE principals SET disabled = ? WHERE principal_id = ?"
    # The principal, if of that tenant: (principal, tenant).
    principal_of_tenant: str = (
        f"SELECT {rows.PRINCIPAL_COLUMNS} FROM principals WHERE principal_id = ? AND tenant_id = ?"
    )
    set_principal_scopes: str = "UPDATE principals SET allowed_scopes = ? WHERE principal_id = ?"
    # The ids of the principal's tokens live at a time: (principal, now).
    live_principal_tokens: str = (
        "SELECT token_id FROM tokens WHERE principal_id = ? AND revoked = FALSE AND expires_at > ? ORDER BY token_id"
    )

    add_item: str = f"INSERT INTO items ({rows.ITEM_COLUMNS}) VALUES {_values(len(rows.ITEM_COLUMNS.split(', ')))}"
    get_item: str = f"SELECT {rows.ITEM_COLUMNS} FROM items WHERE vault_id = ? AND item_id = ?"
    vault_sequence: str = "SELECT sequence FROM vaults WHERE vault_id = ?"
    # Take the vault's next sequence number if the vault is in that tenant: (vault, tenant) -> it; no row otherwise.
    take_tenant_sequence: str = (
        "UPDATE vaults SET sequence = sequence + 1 WHERE vault_id = ? AND tenant_id = ? RETURNING sequence"
    )
    # A keyset page: (vault, after item_id, limit). The primary key (vault_id, item_id) gives the
    # rows in order from the first after `after item_id` on, so every page costs what the first
    # does (EXPLAIN, SQLite: SEARCH items USING INDEX sqlite_autoindex_items_1 (vault_id=? AND
    # item_id>?); PostgreSQL: Index Scan using items_pkey, Index Cond: vault_id = .. AND item_id > ..;
    # neither sorts the vault): a page deep into a large vault costs what the first page does,
    # on both. Without tombstones the filter skips them in the same scan.
    list_items: str = _list_items("")
    list_live_items: str = _list_items(" AND deleted = FALSE")
    # The changes after a cursor: (vault, since, limit). A range scan of items_by_sequence
    # (vault_id, sequence) from the cursor on, in order, so a page costs what the first does
    # (EXPLAIN, SQLite: SEARCH items USING INDEX items_by_sequence (vault_id=? AND sequence>?),
    # no sort; PostgreSQL: Index Scan using items_by_sequence, Index Cond: vault_id = .. AND
    # sequence > .., under the Limit; its outer ORDER BY sorts only the page): a page at the end
    # of a long history costs what the first does, on both. Without the index, SQLite would read
    # the whole vault for any page.
    list_changes: str = (
        f"SELECT {rows.ITEM_COLUMNS} FROM items WHERE vault_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
    )
    vault_change_state: str = "SELECT sequence, purge_horizon FROM vaults WHERE vault_id = ?"
    # The store's epoch (migration 0007 on SQLite, 0008 on PostgreSQL): one row.
    epoch: str = "SELECT epoch FROM store_epoch"
    set_epoch: str = "UPDATE store_epoch SET epoch = ?"
    # A purge raises each vault's horizon to the highest sequence it purged: (sequence, vault).
    raise_purge_horizon: str = "UPDATE vaults SET purge_horizon = ? WHERE vault_id = ? AND purge_horizon < ?"
    # Take the vault's next `count` sequence numbers: (count, vault, count) -> the first of them.
    take_sequences: str = "UPDATE vaults SET sequence = sequence + ? WHERE vault_id = ? RETURNING sequence - ? + 1"

    add_token: str = f"INSERT INTO tokens ({rows.TOKEN_COLUMNS}) VALUES {_values(len(rows.TOKEN_COLUMNS.split(', ')))}"
    find_token: str = f"SELECT {rows.TOKEN_COLUMNS} FROM tokens WHERE secret_hash = ?"
    find_token_with_principal: str = rows.TOKEN_WITH_PRINCIPAL.format("secret_hash")
    get_token: str = f"SELECT {rows.TOKEN_COLUMNS} FROM tokens WHERE token_id = ?"
    token_tenant: str = "SELECT tenant_id FROM tokens WHERE token_id = ?"  # noqa: S105 # SQL, not a secret
    parent_revoked: str = "SELECT revoked FROM tokens WHERE token_id = ?"
    # A token and everything minted from it, transitively: (token id) -> the ids revoked now.
    revoke_tree: str = (
        "WITH RECURSIVE tree (token_id) AS ("
        " SELECT token_id FROM tokens WHERE token_id = ?"
        " UNION SELECT t.token_id FROM tokens t JOIN tree ON t.parent_token_id = tree.token_id)"
        " UPDATE tokens SET revoked = TRUE WHERE token_id IN (SELECT token_id FROM tree) AND revoked = FALSE"
        " RETURNING token_id"
    )
    # Every tree of a principal: a token's descendants are all minted for its principal.
    revoke_principal_tokens: str = (
        "UPDATE tokens SET revoked = TRUE WHERE principal_id = ? AND revoked = FALSE RETURNING token_id"
    )
    # Only when the stored last use is older than the cut-off: concurrent workers write it once.
    touch_token: str = (
        "UPDATE tokens SET last_used_at = ? WHERE token_id = ? AND (last_used_at IS NULL OR last_used_at < ?)"  # noqa: S105
    )

    # The principal's record of a request id, if made at or after a time: (principal, request id, time).
    request_record: str = (
        f"SELECT fingerprint, {rows.ANSWER_COLUMNS} FROM request_ids"
        " WHERE principal_id = ? AND request_id = ? AND recorded_at >= ?"
    )
    record_request: str = _record_request()
    # A delete erases the item's content from the answers recorded of it: (vault, item).
    forget_item_answers: str = "DELETE FROM request_ids WHERE vault_id = ? AND item_id = ? AND deleted = FALSE"
    forget_request_ids: str = "DELETE FROM request_ids WHERE recorded_at < ?"

    forget_mint_attempts: str = "DELETE FROM mint_attempts WHERE principal_id = ? AND at <= ?"
    add_mint_attempt: str = "INSERT INTO mint_attempts VALUES (?, ?)"
    mint_attempts: str = "SELECT at FROM mint_attempts WHERE principal_id = ? ORDER BY at"
    forget_lapsed_proofs: str = "DELETE FROM dpop_proofs WHERE expires_at < ?"
    remember_proof: str = "INSERT INTO dpop_proofs VALUES (?, ?, ?) ON CONFLICT DO NOTHING"

    audit_tenants: str = "SELECT tenant_id FROM audit_heads UNION SELECT tenant_id FROM audit_events ORDER BY 1"
    audit_head: str = "SELECT sequence, hash FROM audit_heads WHERE tenant_id = ?"
    audit_records: str = (
        "SELECT tenant_id, sequence, event, hash FROM audit_events"
        " WHERE tenant_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
    )
    add_audit_record: str = "INSERT INTO audit_events (tenant_id, sequence, event, hash) VALUES (?, ?, ?, ?)"
    set_audit_head: str = (
        "INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES (?, ?, ?)"
        " ON CONFLICT (tenant_id) DO UPDATE SET sequence = excluded.sequence, hash = excluded.hash"
    )


def token_listing(*, one_principal: bool, live_only: bool, after: bool) -> str:
    """Tokens of a tenant with their principals, newest first: (tenant[, principal][, now][, issued_at,
    token_id], limit). A keyset page: `after` continues below the last (issued_at, token_id) listed."""
    columns = ", ".join(f"t.{c}" for c in rows.TOKEN_COLUMNS.split(", "))
    principal = ", ".join(f"p.{c}" for c in rows.PRINCIPAL_COLUMNS.split(", "))
    conditions = ["t.tenant_id = ?"]
    if one_principal:
        conditions.append("t.principal_id = ?")
    if live_only:
        conditions.append("t.revoked = FALSE AND t.expires_at > ?")
    if after:
        conditions.append("(t.issued_at, t.token_id) < (?, ?)")
    return (
        f"SELECT {columns}, {principal} FROM tokens t JOIN principals p ON p.principal_id = t.principal_id"
        f" WHERE {' AND '.join(conditions)} ORDER BY t.issued_at DESC, t.token_id DESC LIMIT ?"
    )


SQLITE = Statements()
# psycopg's placeholder; none of these texts holds a `?` or a `%` of its own.
POSTGRESQL = Statements(**{f.name: getattr(SQLITE, f.name).replace("?", "%s") for f in fields(Statements)})
