-- zkplatform schema 6 (SQLite): request ids (AIP-155).
-- A write that succeeds with a request id records, in its own transaction, what it asked
-- (the SHA-256 fingerprint of its method and request) and what it answered, so that a
-- repeat of it by the same principal within 24 hours answers the same and changes
-- nothing. The answer is a change of an item, in the columns of `items` (NULL
-- otherwise), or token ids, space-separated: the one a mint minted (never its secret),
-- those a revocation revoked (possibly none: '').
CREATE TABLE request_ids (
    principal_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    recorded_at INTEGER NOT NULL,
    vault_id TEXT,
    item_id TEXT,
    tenant_id TEXT,
    version INTEGER,
    kind TEXT,
    title_hash TEXT,
    updated_at INTEGER,
    payload TEXT,
    wrapped_keys TEXT,
    deleted INTEGER,
    sequence INTEGER,
    token_ids TEXT,
    PRIMARY KEY (principal_id, request_id)
) STRICT;

-- The purge of tombstones forgets the records past 24 hours.
CREATE INDEX request_ids_by_time ON request_ids (recorded_at);

-- A delete erases the item's content from the answers recorded of it, as from the item.
CREATE INDEX request_ids_by_item ON request_ids (vault_id, item_id);
