"""The SQLite store's tokens: added, minted, found, listed and revoked."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, TokenRecord
from zkplatform.domain.ports.refusals import ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.domain.ports.tokens import MintOutcome, RevokeOutcome
from zkplatform.domain.request_ids import RequestId
from zkplatform.store import rows
from zkplatform.store.sqlite.database import Database, _earlier, _insert, _record, _remember
from zkplatform.store.statements import SQLITE as SQL
from zkplatform.store.statements import token_listing

# Many tokens by id, as one JSON array: SQLite has no arrays, and a list of placeholders would
# be a statement of its own for every count.
_TOKENS_WITH_PRINCIPALS = rows.TOKEN_WITH_PRINCIPAL.format("token_id").replace(
    "= ?", "IN (SELECT value FROM json_each(?))"
)


class SQLiteTokens(Database):
    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _add_token(conn, token)
            _record(conn, [actor.event(token.tenant_id, Action.TOKEN_ISSUED, token=token.token_id)])

        await self._write(add)

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        def add(conn: sqlite3.Connection) -> MintOutcome:
            if (earlier := _earlier(conn, actor, request, tuple)) is not None:
                return earlier
            # In the writer's transaction: a revocation committed before this is seen here.
            parent = conn.execute(SQL.parent_revoked, (token.parent_token_id,)).fetchone()
            if parent is not None and parent[0]:
                raise ParentRevoked(f"token {token.parent_token_id} was revoked")
            count, first_expiry = conn.execute(
                "SELECT count(*), min(expires_at) FROM tokens"
                " WHERE principal_id = ? AND minted = 1 AND revoked = 0 AND expires_at > ?",
                (token.principal_id, actor.at),
            ).fetchone()
            if count >= cap:
                return int(first_expiry)
            _add_token(conn, token)
            _record(conn, [actor.event(token.tenant_id, Action.TOKEN_MINTED, token=token.token_id)])
            _remember(conn, actor, request, (token.token_id,))
            return None

        return await self._write(add)

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None:
        row = self._lookup(lambda c: c.execute(SQL.find_token, (secret_hash,)).fetchone())
        return None if row is None else rows.token_from_row(row)

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        row = self._lookup(lambda c: c.execute(SQL.find_token_with_principal, (secret_hash,)).fetchone())
        return None if row is None else rows.token_with_principal_from_row(row)

    async def get_token(self, token_id: str) -> TokenRecord | None:
        row = self._lookup(lambda c: c.execute(SQL.get_token, (token_id,)).fetchone())
        return None if row is None else rows.token_from_row(row)

    async def get_tokens_with_principals(self, token_ids: Collection[str]) -> dict[str, tuple[TokenRecord, Principal]]:
        ids = json.dumps(list(token_ids))
        found = self._lookup(lambda c: c.execute(_TOKENS_WITH_PRINCIPALS, (ids,)).fetchall())
        return {
            record.token_id: (record, principal) for record, principal in map(rows.token_with_principal_from_row, found)
        }

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        revoked = await self._write(lambda conn: _revoke_tree(conn, token_id, actor, action, audited=audited))
        self._feed.revoked(revoked or ())
        return revoked

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        def revoke(conn: sqlite3.Connection) -> RevokeOutcome:
            if (earlier := _earlier(conn, actor, request, tuple)) is not None:
                return earlier
            revoked = _revoke_tree(conn, token_id, actor, Action.TOKEN_REVOKED, audited=True)
            if revoked is not None:
                _remember(conn, actor, request, tuple(revoked))
            return revoked

        outcome = await self._write(revoke)
        if isinstance(outcome, list):
            self._feed.revoked(outcome)
        return outcome

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
        )
        params = rows.listing_params(tenant_id, principal_id, live_at, after, limit)
        found = await self._read(lambda c: c.execute(query, params).fetchall())
        return [rows.token_with_principal_from_row(row) for row in found]

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        # Through the group-commit writer, not waited for: the call that authenticated goes on
        # at once (its answer never waits for this fsync), and the write joins whatever
        # transaction the writer commits next.
        self._background.start(self._write(lambda c: c.execute(SQL.touch_token, (now, token_id, stale_before))))


def _add_token(conn: sqlite3.Connection, token: TokenRecord) -> None:
    state = conn.execute(SQL.principal_disabled, (token.principal_id,)).fetchone()
    if state is None:
        raise UnknownReference(f"no principal {token.principal_id}")
    if state[0]:
        raise PrincipalDisabled(f"principal {token.principal_id} is disabled")
    _insert(
        conn,
        SQL.add_token,
        rows.token_params(token),
        "token",
    )


def _revoke_tree(
    conn: sqlite3.Connection, token_id: str, actor: Actor, action: Action, *, audited: bool
) -> list[str] | None:
    found = conn.execute(SQL.token_tenant, (token_id,)).fetchone()
    if found is None:
        return None
    revoked = sorted(row[0] for row in conn.execute(SQL.revoke_tree, (token_id,)))
    if audited:
        _record(conn, audit.revoke_events(actor, action, found[0], token_id, revoked))
    return revoked
