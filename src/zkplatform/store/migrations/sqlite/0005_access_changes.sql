-- zkplatform schema 5 (SQLite): watches woken by a revocation or a member's removal.
-- A worker learns what other processes commit to the file by polling (store/notify.py):
-- when `PRAGMA data_version` moved, it reads the subscribed vaults' marks and the count
-- of revocations, and where one moved its watches check their token and membership
-- again at once, instead of at their next heartbeat. Triggers, so that every writer
-- moves them: the use cases, an operator's command in another process, an import.

-- How many times a member left the vault. Additions move nothing: a new member ends
-- no watch.
ALTER TABLE vaults ADD COLUMN membership_mark INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER vault_members_deleted AFTER DELETE ON vault_members BEGIN
    UPDATE vaults SET membership_mark = membership_mark + 1 WHERE vault_id = old.vault_id;
END;

CREATE TRIGGER vault_members_updated AFTER UPDATE ON vault_members BEGIN
    UPDATE vaults SET membership_mark = membership_mark + 1 WHERE vault_id IN (old.vault_id, new.vault_id);
END;

-- How many tokens were ever revoked, in one row. A count does not say which token, so
-- when it moves every watch of the worker checks again (two reads by key each, on the
-- event loop: revocations are rare, and a disable of a principal's thousand tokens is
-- one move for the poller however many it counts).
CREATE TABLE token_revocations (
    total INTEGER NOT NULL
) STRICT;

INSERT INTO token_revocations VALUES (0);

-- Only a token turning revoked: the hot update of tokens, its last use, names another
-- column and does not run this.
CREATE TRIGGER tokens_revoked AFTER UPDATE OF revoked ON tokens
    WHEN new.revoked AND NOT old.revoked
BEGIN
    UPDATE token_revocations SET total = total + 1;
END;
