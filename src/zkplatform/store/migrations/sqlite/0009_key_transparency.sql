-- zkplatform schema 9 (SQLite): each tenant's key log as a transparency log (docs/key-transparency.md,
-- domain/key_log.py): its entries and leaf hashes, the devices they made, and the witnesses'
-- cosignatures of its checkpoints. Times are Unix seconds.

-- The key directory of schema 8 (recipient keys and a hash-chained key log) was never released:
-- its tables are dropped, not migrated. Their indexes go with them.
DROP TABLE recipient_keys;
DROP TABLE key_log;
DROP TABLE key_log_heads;

-- The entries, from index 0. `data` is a BLOB: the entry's canonical bytes (UTF-8 JSON) exactly as
-- they were hashed, which no text conversion may touch; `leaf_hash` = SHA-256(0x00 || data).
CREATE TABLE key_log_entries (
    tenant_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    data BLOB NOT NULL,
    leaf_hash BLOB NOT NULL CHECK (length(leaf_hash) = 32),
    PRIMARY KEY (tenant_id, idx)
) STRICT, WITHOUT ROWID;

-- How many entries each tenant's log holds: an append is a compare-and-set on it, in the store's
-- write transaction (BEGIN IMMEDIATE holds the file's write lock), so that appends of one tenant,
-- from any process on the file, are decided one after the other and the log never forks.
CREATE TABLE key_log_heads (
    tenant_id TEXT PRIMARY KEY,
    size INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The devices the entries made. A device is known by its tenant and its id (its signing key's
-- thumbprint); its agreement key's thumbprint names it in sealed items, so it too is one
-- device's only in a tenant.
CREATE TABLE devices (
    tenant_id TEXT NOT NULL,
    principal_id TEXT NOT NULL REFERENCES principals (principal_id),
    device_id TEXT NOT NULL,
    signing_jwk TEXT NOT NULL, -- canonical Ed25519 JWK
    agreement_key_id TEXT NOT NULL,
    agreement_jwk TEXT NOT NULL, -- canonical X25519 or P-256 JWK
    endorser TEXT NOT NULL, -- a device id, '' for a first device
    created_at INTEGER NOT NULL, -- the statement's time
    log_index INTEGER NOT NULL, -- the entry that published it
    revoked_at INTEGER, -- NULL while the device is live
    revoked_index INTEGER, -- the entry that revoked it; NULL while live
    PRIMARY KEY (tenant_id, device_id),
    UNIQUE (tenant_id, agreement_key_id)
) STRICT, WITHOUT ROWID;

-- A tenant's principals' devices in log order: listings, GetRecipientKeys' pages.
CREATE INDEX devices_by_principal ON devices (tenant_id, principal_id, log_index);

-- The witnesses' cosignatures of each tenant's checkpoints: the newest of each witness per size.
-- Those of older sizes are kept: which sizes a quorum will need depends on the witness policy
-- and on cosignatures still to come (a slow witness's of an older size may land after a fast
-- one's of a newer size), and a row per witness and size cosigned grows no faster than the log.
CREATE TABLE witness_cosignatures (
    tenant_id TEXT NOT NULL,
    size INTEGER NOT NULL,
    witness TEXT NOT NULL, -- the witness key's name
    cosigned_at INTEGER NOT NULL, -- the cosignature's own time
    line TEXT NOT NULL, -- the signature line as the witness answered it
    PRIMARY KEY (tenant_id, size, witness)
) STRICT, WITHOUT ROWID;
