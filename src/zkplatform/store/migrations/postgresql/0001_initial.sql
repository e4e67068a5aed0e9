-- zkplatform schema 1 (PostgreSQL). Times are Unix seconds.
CREATE TABLE tenants (
    tenant_id TEXT PRIMARY KEY
);

CREATE TABLE principals (
    principal_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (tenant_id),
    role TEXT NOT NULL,
    allowed_scopes TEXT NOT NULL -- space-separated
);

CREATE TABLE vaults (
    vault_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (tenant_id),
    sequence BIGINT NOT NULL DEFAULT 0 -- of the vault's latest change
);

CREATE TABLE vault_members (
    vault_id TEXT NOT NULL REFERENCES vaults (vault_id),
    principal_id TEXT NOT NULL REFERENCES principals (principal_id),
    PRIMARY KEY (vault_id, principal_id)
);

CREATE TABLE items (
    vault_id TEXT NOT NULL REFERENCES vaults (vault_id),
    item_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    kind TEXT NOT NULL,
    title_hash TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    payload TEXT, -- JSON; NULL on a tombstone
    wrapped_keys TEXT NOT NULL, -- JSON array; [] on a tombstone
    deleted BOOLEAN NOT NULL,
    sequence BIGINT NOT NULL, -- the vault sequence of the item's latest change
    PRIMARY KEY (vault_id, item_id)
);

CREATE INDEX items_tombstones ON items (updated_at) WHERE deleted;

CREATE TABLE tokens (
    secret_hash BYTEA PRIMARY KEY, -- HMAC-SHA256(pepper, token); never the token
    token_id TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL,
    principal_id TEXT NOT NULL REFERENCES principals (principal_id),
    scopes TEXT NOT NULL, -- space-separated
    issued_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    pop_key_id TEXT NOT NULL,
    minted BOOLEAN NOT NULL,
    revoked BOOLEAN NOT NULL
);

CREATE INDEX tokens_minted ON tokens (principal_id, expires_at) WHERE minted;

CREATE TABLE mint_attempts (
    principal_id TEXT NOT NULL,
    at BIGINT NOT NULL
);

CREATE INDEX mint_attempts_by_principal ON mint_attempts (principal_id, at);

CREATE TABLE dpop_proofs (
    key_thumbprint TEXT NOT NULL,
    jti TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (key_thumbprint, jti)
);

-- Every proof remembered first forgets the lapsed ones: find them without a scan.
CREATE INDEX dpop_proofs_by_expiry ON dpop_proofs (expires_at);
