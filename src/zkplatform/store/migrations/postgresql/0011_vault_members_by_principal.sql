-- zkplatform schema 11 (PostgreSQL): the vaults of a principal, found by the principal.
-- ListVaults reads a page of the vaults its caller is a member of, by vault id; the primary key
-- (vault_id, principal_id) finds a vault's members, this index a member's vaults, in order, from
-- where the page starts (an index only scan of vault_members_by_principal, Index Cond:
-- principal_id = .. AND vault_id > ..), whatever the store holds besides.
CREATE INDEX vault_members_by_principal ON vault_members (principal_id, vault_id);
