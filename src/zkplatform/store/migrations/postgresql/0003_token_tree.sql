-- zkplatform schema 3 (PostgreSQL): the token tree, token last use, disabled principals.
-- A minted token remembers the token it was minted from ('' for an operator-issued
-- one), so that revoking a token revokes everything minted from it.
ALTER TABLE tokens ADD COLUMN parent_token_id TEXT NOT NULL DEFAULT '';

-- When the token last authenticated a call, in Unix seconds, written at most once a
-- minute per token; NULL if never.
ALTER TABLE tokens ADD COLUMN last_used_at BIGINT;

-- A disabled principal holds no live token and is issued none.
ALTER TABLE principals ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT false;

-- Revocation walks the tree from a token to its children.
CREATE INDEX tokens_by_parent ON tokens (parent_token_id) WHERE parent_token_id <> '';

-- Listing, newest first: a principal's tokens, and a tenant's.
CREATE INDEX tokens_by_principal ON tokens (principal_id, issued_at, token_id);
CREATE INDEX tokens_by_tenant ON tokens (tenant_id, issued_at, token_id);
