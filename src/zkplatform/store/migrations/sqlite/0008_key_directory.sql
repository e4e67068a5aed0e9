-- zkplatform schema 8 (SQLite): the recipient key directory and each tenant's key log.
-- Times are Unix seconds.

-- The public keys principals publish for others to wrap item keys for. A key is known by its
-- tenant and its RFC 7638 thumbprint: the same key may be in two tenants, never twice in one.
CREATE TABLE recipient_keys (
    tenant_id TEXT NOT NULL,
    key_id TEXT NOT NULL, -- the thumbprint: base64url SHA-256 of jwk
    principal_id TEXT NOT NULL REFERENCES principals (principal_id),
    jwk TEXT NOT NULL, -- the public key, canonical JSON (RFC 7638)
    created_at INTEGER NOT NULL,
    revoked_at INTEGER, -- NULL while the key is live
    PRIMARY KEY (tenant_id, key_id)
) STRICT, WITHOUT ROWID;

-- GetRecipientKeys and the operator's listing: a tenant's principals' keys, oldest first.
CREATE INDEX recipient_keys_by_principal ON recipient_keys (tenant_id, principal_id, created_at, key_id);
-- The operator's `key revoke KEY_ID`, which names a key by its id alone.
CREATE INDEX recipient_keys_by_id ON recipient_keys (key_id);

-- Each tenant's key log, a hash chain (see domain/key_log.py): `entry` holds the exact
-- bytes that were hashed, `hash` = SHA-256(previous entry's hash || entry).
CREATE TABLE key_log (
    tenant_id TEXT NOT NULL,
    log_index INTEGER NOT NULL,
    entry BLOB NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (tenant_id, log_index)
) STRICT, WITHOUT ROWID;

-- Where each tenant's log ends; moved in the transaction of every change of a key.
CREATE TABLE key_log_heads (
    tenant_id TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    hash BLOB NOT NULL
) STRICT, WITHOUT ROWID;
