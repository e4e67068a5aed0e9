"""The PostgreSQL store's tokens: added, minted, found, listed and revoked."""

from __future__ import annotations

from collections.abc import Collection

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, TokenRecord
from zkplatform.domain.ports.refusals import ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.domain.ports.tokens import MintOutcome, RevokeOutcome
from zkplatform.domain.request_ids import RequestId
from zkplatform.store import rows
from zkplatform.store.postgres.connection import Conn
from zkplatform.store.postgres.database import Database, _claim, _fetchone, _insert, _lock_principal, _record, _settle
from zkplatform.store.statements import POSTGRESQL as SQL
from zkplatform.store.statements import token_listing

# Many tokens by id, as one array.
_TOKENS_WITH_PRINCIPALS = rows.TOKEN_WITH_PRINCIPAL.format("token_id").replace("= ?", "= ANY(%s)")


class PostgresTokens(Database):
    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _add_token(conn, token)
            await _record(conn, [actor.event(token.tenant_id, Action.TOKEN_ISSUED, token=token.token_id)])

        await self._tx(add)

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        async def add(conn: Conn) -> MintOutcome:
            if request is not None and (earlier := await _claim(conn, actor, request, tuple)) is not None:
                return earlier
            # The principal's row lock orders this after any revocation of its tokens or its
            # disabling (they take the same lock), and the statements below, each with a fresh
            # snapshot, see what those committed.
            await _usable_principal(conn, token.principal_id)
            parent = await _fetchone(conn, SQL.parent_revoked, (token.parent_token_id,))
            if parent is not None and parent[0]:
                raise ParentRevoked(f"token {token.parent_token_id} was revoked")
            count, first_expiry = await _fetchone(
                conn,
                "SELECT count(*), min(expires_at) FROM tokens"
                " WHERE principal_id = %s AND minted AND NOT revoked AND expires_at > %s",
                (token.principal_id, actor.at),
            ) or (0, None)
            if count >= cap:
                if request is not None:
                    await _settle(conn, actor, request, None)
                return int(first_expiry)
            await _add_token(conn, token)
            await _record(conn, [actor.event(token.tenant_id, Action.TOKEN_MINTED, token=token.token_id)])
            if request is not None:
                await _settle(conn, actor, request, (token.token_id,))
            return None

        return await self._tx(add)

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None:
        row = await self._one(SQL.find_token, (secret_hash,))
        return None if row is None else rows.token_from_row(row)

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        row = await self._one(SQL.find_token_with_principal, (secret_hash,))
        return None if row is None else rows.token_with_principal_from_row(row)

    async def get_token(self, token_id: str) -> TokenRecord | None:
        row = await self._one(SQL.get_token, (token_id,))
        return None if row is None else rows.token_from_row(row)

    async def get_tokens_with_principals(self, token_ids: Collection[str]) -> dict[str, tuple[TokenRecord, Principal]]:
        found = await self._all(_TOKENS_WITH_PRINCIPALS, (list(token_ids),))
        return {
            record.token_id: (record, principal) for record, principal in map(rows.token_with_principal_from_row, found)
        }

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        return await self._tx(lambda conn: _revoke_tree(conn, token_id, actor, action, audited=audited))

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        async def revoke(conn: Conn) -> RevokeOutcome:
            if request is not None and (earlier := await _claim(conn, actor, request, tuple)) is not None:
                return earlier
            revoked = await _revoke_tree(conn, token_id, actor, Action.TOKEN_REVOKED, audited=True)
            if request is not None:
                await _settle(conn, actor, request, None if revoked is None else tuple(revoked))
            return revoked

        return await self._tx(revoke)

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        query = token_listing(
            one_principal=principal_id is not None, live_only=live_at is not None, after=after is not None
        ).replace("?", "%s")
        found = await self._all(query, rows.listing_params(tenant_id, principal_id, live_at, after, limit))
        return [rows.token_with_principal_from_row(row) for row in found]

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        # Not waited for: the call that authenticated goes on at once; the UPDATE's condition
        # makes the workers that race for one token write it once.
        async def touch() -> None:
            async with self._connection() as conn:
                await conn.execute(SQL.touch_token, (now, token_id, stale_before))

        self._background.start(touch())


async def _revoke_tree(conn: Conn, token_id: str, actor: Actor, action: Action, *, audited: bool) -> list[str] | None:
    row = await _fetchone(conn, "SELECT principal_id, tenant_id FROM tokens WHERE token_id = %s", (token_id,))
    if row is None:
        return None
    # A tree belongs to one principal (a token mints only for its own). With the
    # principal's row locked, no mint for it is between its checks and its commit, so
    # the walk below, a statement with a fresh snapshot, sees every child there is.
    await _lock_principal(conn, row[0])
    cursor = await conn.execute(SQL.revoke_tree, (token_id,))
    revoked = sorted(r[0] for r in await cursor.fetchall())
    if audited:
        await _record(conn, audit.revoke_events(actor, action, row[1], token_id, revoked))
    return revoked


async def _usable_principal(conn: Conn, principal_id: str) -> None:
    """Lock the principal's row; UnknownReference without it, PrincipalDisabled when it is disabled."""
    row = await _fetchone(conn, "SELECT disabled FROM principals WHERE principal_id = %s FOR UPDATE", (principal_id,))
    if row is None:
        raise UnknownReference(f"no principal {principal_id}")
    if row[0]:
        raise PrincipalDisabled(f"principal {principal_id} is disabled")


async def _add_token(conn: Conn, token: TokenRecord) -> None:
    await _usable_principal(conn, token.principal_id)
    await _insert(
        conn,
        SQL.add_token,
        rows.token_params(token),
        "token",
    )
