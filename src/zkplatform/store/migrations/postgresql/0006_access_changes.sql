-- zkplatform schema 6 (PostgreSQL): watches woken by a revocation or a member's removal.
-- Like the changes of items (migration 0004), these are announced at their commit on
-- zk_changes to every worker LISTENing, whichever process made them (the use cases, an
-- operator's command on another host): the watches concerned check their token and
-- membership again at once, instead of at their next heartbeat.

-- Payload "revoked <token id>": only the watches of that token are woken. Per row, so
-- that a revoked tree or a disabled principal names each token (PostgreSQL sends each
-- distinct payload once per transaction); a trigger on the revoked column alone, so the
-- hot update of tokens, their last use, never runs it.
CREATE FUNCTION zk_announce_revocation() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_notify('zk_changes', 'revoked ' || NEW.token_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER tokens_revoked AFTER UPDATE OF revoked ON tokens
    FOR EACH ROW WHEN (NEW.revoked AND NOT OLD.revoked)
    EXECUTE FUNCTION zk_announce_revocation();

-- Payload "access <vault id>": the watches of the vault are woken, once per vault and
-- statement. Only a member leaving (a delete, or an update that moves one): a new
-- member ends no watch.
CREATE FUNCTION zk_announce_members_left() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_notify('zk_changes', 'access ' || vault_id)
       FROM left_members GROUP BY vault_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER vault_members_deleted AFTER DELETE ON vault_members
    REFERENCING OLD TABLE AS left_members
    FOR EACH STATEMENT EXECUTE FUNCTION zk_announce_members_left();

CREATE TRIGGER vault_members_updated AFTER UPDATE ON vault_members
    REFERENCING OLD TABLE AS left_members
    FOR EACH STATEMENT EXECUTE FUNCTION zk_announce_members_left();
