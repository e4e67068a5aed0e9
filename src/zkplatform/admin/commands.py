"""What each `zkplatform admin` command does to the store.

Each takes the parsed arguments and an open store and returns what to print on
standard output; a refusal raises, and `main` turns it into one line on
standard error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable

from google.protobuf import json_format

from zkplatform.admin import listing
from zkplatform.admin.importer import Spool, check_file, storing
from zkplatform.config import ConfigError, Settings
from zkplatform.domain import tokens
from zkplatform.domain.audit import Actor
from zkplatform.domain.clock import system_clock
from zkplatform.domain.models import Principal, Role, ScopeChange, ScopeEdit, Tenant, TokenRecord, Vault
from zkplatform.messages.convert import token_to_proto
from zkplatform.pepper import load_pepper
from zkplatform.store import MigratableStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import vault_pb2

SECONDS_PER_DAY = 86_400
# A century: beyond any real retention, and `now - retention` stays well within the stores' integers.
MAX_RETENTION_DAYS = 100 * 365

Command = Callable[[argparse.Namespace, MigratableStore], Awaitable[str]]


class Refused(Exception):
    """Input the command will not act on: one line for the operator, exit code 1."""


async def migrate(args: argparse.Namespace, store: MigratableStore) -> str:  # one signature for all
    applied = await store.migrate()
    if not applied:
        version = await store.schema_version()
        return "the schema is up to date" + (f" (version {version})" if version else "")
    return f"applied migration(s) {', '.join(map(str, applied))}"


async def add_tenant(args: argparse.Namespace, store: MigratableStore) -> str:
    await store.add_tenant(Tenant(args.tenant_id), _operator())
    return f"tenant {args.tenant_id} added"


async def add_principal(args: argparse.Namespace, store: MigratableStore) -> str:
    principal = Principal.new(args.principal_id, args.tenant, Role(args.role), args.scopes)
    await store.add_principal(principal, _operator())
    role, scopes = principal.role, principal.allowed_scopes
    return f"principal {args.principal_id} added to tenant {args.tenant} as {role} with {_listed(scopes)}"


async def add_vault(args: argparse.Namespace, store: MigratableStore) -> str:
    members = frozenset(args.members)
    await store.add_vault(Vault(args.vault_id, args.tenant, members), _operator())
    return f"vault {args.vault_id} added to tenant {args.tenant} with {len(members)} member(s)"


async def import_items(args: argparse.Namespace, store: MigratableStore) -> str:
    if args.dry_run:
        return await _check_import(args.file, store)
    with Spool() as spool:
        # Pass 1, in a thread so that the event loop (and a PostgreSQL pool) stays responsive:
        # the whole file checked, before anything is stored.
        await asyncio.to_thread(check_file, args.file, spool.add)
        # Pass 2: one add_items, one transaction, all or nothing, fed as the store takes them.
        await store.add_items(storing(spool), _operator())
        return f"imported {spool.count} item(s)"


async def _check_import(name: str, store: MigratableStore) -> str:
    """`import --dry-run`: pass 1, and whether the store has the items' vaults; nothing is stored."""
    vaults: set[tuple[str, str]] = set()

    def note(message: vault_pb2.Item) -> None:
        vaults.add((message.vault_id, message.tenant_id))

    count = await asyncio.to_thread(check_file, name, note)
    missing = []
    for vault_id, tenant_id in sorted(vaults):
        found = await store.get_vault(vault_id)
        if found is None or found.tenant_id != tenant_id:
            missing.append(f"no vault {vault_id} in tenant {tenant_id}")
    if missing:
        raise Refused("; ".join(missing))
    return f"{count} item(s) checked, all good; nothing was stored (--dry-run)"


async def issue_token(args: argparse.Namespace, store: MigratableStore) -> str:
    settings = Settings.from_env()
    # The server's pepper, or tokens issued here would not be recognised there.
    platform = Platform.build(store, load_pepper(settings.token_pepper, settings.state_dir))
    issued = await platform.issuer.issue_for(args.principal, args.ttl, args.scopes)
    token = json_format.MessageToDict(token_to_proto(issued, issued.role))
    return json.dumps(token, separators=(",", ":"))  # the secret: shown here, once


async def revoke_token(args: argparse.Namespace, store: MigratableStore) -> str:
    token_id = _token_id(args.token_id)
    revoked = await store.revoke_token_tree(token_id, _operator())
    if revoked is None:
        msg = f"no token {token_id}"
        raise Refused(msg)
    minted = [r for r in revoked if r != token_id]
    if token_id not in revoked:
        return f"token {token_id} was already revoked" + (
            f"; revoked {len(minted)} token(s) minted from it" if minted else ""
        )
    if minted:
        return f"token {token_id} revoked, with {len(minted)} token(s) minted from it: {', '.join(minted)}"
    return f"token {token_id} revoked"


async def list_tenants(args: argparse.Namespace, store: MigratableStore) -> str:
    found = await store.list_tenants()
    return listing.render(map(listing.tenant_row, found), table=args.table, columns=["tenantId"])


PRINCIPAL_COLUMNS = ["principalId", "tenantId", "role", "scopes", "disabled"]


async def list_principals(args: argparse.Namespace, store: MigratableStore) -> str:
    found = await store.list_principals(args.tenant)
    return listing.render(map(listing.principal_row, found), table=args.table, columns=PRINCIPAL_COLUMNS)


async def change_principal_scopes(args: argparse.Namespace, store: MigratableStore) -> str:
    """The principal as `principal list` shows it, after the change; what changed on standard error."""
    # Exactly one of --scopes, --add and --remove (argparse sees to it); '' is an empty list, not None.
    edit = next(edit for edit in ScopeEdit if getattr(args, f"scopes_{edit}") is not None)
    change = ScopeChange(edit, frozenset(getattr(args, f"scopes_{edit}")))
    before, after = await store.change_principal_scopes(args.tenant, args.principal_id, change, _operator())
    added, removed = after.allowed_scopes - before.allowed_scopes, before.allowed_scopes - after.allowed_scopes
    said = [f"added {', '.join(sorted(added))}"] if added else []
    said += [f"removed {', '.join(sorted(removed))}"] if removed else []
    summary = "; ".join(said) or "nothing was changed"
    print(f"zkplatform admin: principal {after.principal_id} in tenant {after.tenant_id}: {summary}", file=sys.stderr)
    return listing.render([listing.principal_row(after)], table=args.table, columns=PRINCIPAL_COLUMNS)


async def list_vaults(args: argparse.Namespace, store: MigratableStore) -> str:
    found = await store.list_vaults(args.tenant)
    return listing.render(map(listing.vault_row, found), table=args.table, columns=["vaultId", "tenantId", "members"])


async def add_vault_member(args: argparse.Namespace, store: MigratableStore) -> str:
    if await store.add_vault_member(args.vault_id, args.principal_id, _operator()):
        return f"{args.principal_id} is now a member of vault {args.vault_id}"
    return f"{args.principal_id} was already a member of vault {args.vault_id}; nothing was changed"


async def remove_vault_member(args: argparse.Namespace, store: MigratableStore) -> str:
    # Membership is read on every call, so the principal's next call on the vault is refused.
    if await store.remove_vault_member(args.vault_id, args.principal_id, _operator()):
        return f"{args.principal_id} is no longer a member of vault {args.vault_id}"
    return f"{args.principal_id} was not a member of vault {args.vault_id}; nothing was changed"


async def disable_principal(args: argparse.Namespace, store: MigratableStore) -> str:
    revoked = await store.set_principal_disabled(args.principal_id, _operator(), disabled=True)
    if revoked is None:
        msg = f"no principal {args.principal_id}"
        raise Refused(msg)
    return f"principal {args.principal_id} disabled; {len(revoked)} token(s) revoked" + (
        f": {', '.join(revoked)}" if revoked else ""
    )


async def enable_principal(args: argparse.Namespace, store: MigratableStore) -> str:
    if await store.set_principal_disabled(args.principal_id, _operator(), disabled=False) is None:
        msg = f"no principal {args.principal_id}"
        raise Refused(msg)
    return f"principal {args.principal_id} enabled; its revoked tokens stay revoked (issue a new one)"


TOKEN_COLUMNS = [
    "tokenId",
    "principalId",
    "origin",
    "parentTokenId",
    "scopes",
    "issuedAt",
    "expiresAt",
    "lastUsedAt",
    "state",
]
LIST_PAGE = 1000


async def list_tokens(args: argparse.Namespace, store: MigratableStore) -> str:
    """Every token of the principal, live or not, newest first: an operator looking for a
    token id wants the revoked and expired ones too, each with its state."""
    principal = await store.get_principal(args.principal)
    if principal is None:
        msg = f"no principal {args.principal}"
        raise Refused(msg)
    found: list[TokenRecord] = []
    after: tuple[int, str] | None = None
    while True:
        page = await store.list_tokens(
            principal.tenant_id, principal.principal_id, live_at=None, after=after, limit=LIST_PAGE
        )
        found.extend(record for record, _ in page)
        if len(page) < LIST_PAGE:
            break
        after = (found[-1].issued_at, found[-1].token_id)
    now = system_clock()
    rows = [listing.token_row(record, principal.role, now) for record in found]
    return listing.render(rows, table=args.table, columns=TOKEN_COLUMNS)


async def show_token(args: argparse.Namespace, store: MigratableStore) -> str:
    token_id = _token_id(args.token_id)
    record = await store.get_token(token_id)
    principal = None if record is None else await store.get_principal(record.principal_id)
    if record is None or principal is None:
        msg = f"no token {token_id}"
        raise Refused(msg)
    return listing.render(
        [listing.token_row(record, principal.role, system_clock())], table=args.table, columns=TOKEN_COLUMNS
    )


def _token_id(given: str) -> str:
    if given.startswith(tokens.PREFIX):
        # A secret given by mistake: refuse it without repeating it anywhere.
        msg = "that is a token's secret, not its id: name the token by its tokenId (tok_...) printed with it"
        raise Refused(msg)
    return given


async def purge_tombstones(args: argparse.Namespace, store: MigratableStore) -> str:
    days: int = Settings.from_env().tombstone_retention_days if args.older_than_days is None else args.older_than_days
    if days > MAX_RETENTION_DAYS:
        msg = f"ZKPLATFORM_TOMBSTONE_RETENTION_DAYS must be at most {MAX_RETENTION_DAYS}, not {days}"
        raise ConfigError(msg)
    purged = await store.purge_tombstones(system_clock() - days * SECONDS_PER_DAY, _operator())
    return f"purged {purged} tombstone(s) deleted more than {days} day(s) ago"


async def rotate_epoch(args: argparse.Namespace, store: MigratableStore) -> str:
    before = await store.epoch()
    after = await store.rotate_epoch(_operator())
    return (
        f"the store's epoch is now {after} (it was {before}): clients resuming from a cursor"
        " of the old epoch will list their vaults again"
    )


def _operator() -> Actor:
    """The author of a change made by an operator command, for the audit trail."""
    return Actor.operator(system_clock())


def _listed(scopes: frozenset[str]) -> str:
    return f"scopes {', '.join(sorted(scopes))}" if scopes else "no scopes"
