-- zkplatform schema 4 (SQLite): the audit trail.
-- Each tenant's events form a hash chain (see domain/audit.py): `event` holds the
-- exact bytes that were hashed, `hash` = SHA-256(previous event's hash || event).
CREATE TABLE audit_events (
    tenant_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    event BLOB NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (tenant_id, sequence)
) WITHOUT ROWID;

-- Where each tenant's chain ends: the next event continues from here, and a
-- verification that stops short of it knows events were removed from the end.
CREATE TABLE audit_heads (
    tenant_id TEXT PRIMARY KEY,
    sequence INTEGER NOT NULL,
    hash BLOB NOT NULL
) WITHOUT ROWID;
