"""What each `zkplatform admin` command does to the store.

Each takes the parsed arguments and an open store and returns what to print on
standard output; a refusal raises, and `main` turns it into one line on
standard error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable

from google.protobuf import json_format

from zkplatform.admin.importer import Spool, check_file, storing
from zkplatform.config import ConfigError, Settings
from zkplatform.domain import tokens
from zkplatform.domain.clock import system_clock
from zkplatform.domain.models import Principal, Role, Tenant, Vault
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
    await store.add_tenant(Tenant(args.tenant_id))
    return f"tenant {args.tenant_id} added"


async def add_principal(args: argparse.Namespace, store: MigratableStore) -> str:
    principal = Principal.new(args.principal_id, args.tenant, Role(args.role), args.scopes)
    await store.add_principal(principal)
    role, scopes = principal.role, principal.allowed_scopes
    return f"principal {args.principal_id} added to tenant {args.tenant} as {role} with {_listed(scopes)}"


async def add_vault(args: argparse.Namespace, store: MigratableStore) -> str:
    members = frozenset(args.members)
    await store.add_vault(Vault(args.vault_id, args.tenant, members))
    return f"vault {args.vault_id} added to tenant {args.tenant} with {len(members)} member(s)"


async def import_items(args: argparse.Namespace, store: MigratableStore) -> str:
    if args.dry_run:
        return await _check_import(args.file, store)
    with Spool() as spool:
        # Pass 1, in a thread so that the event loop (and a PostgreSQL pool) stays responsive:
        # the whole file checked, before anything is stored.
        await asyncio.to_thread(check_file, args.file, spool.add)
        # Pass 2: one add_items, one transaction, all or nothing, fed as the store takes them.
        await store.add_items(storing(spool))
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
    token_id: str = args.token_id
    if token_id.startswith(tokens.PREFIX):
        # A secret given by mistake: refuse it without repeating it anywhere.
        msg = "that is a token's secret, not its id: revoke by the tokenId (tok_...) printed with the token"
        raise Refused(msg)
    if not await store.revoke_token_id(token_id):
        msg = f"no token {token_id}"
        raise Refused(msg)
    return f"token {token_id} revoked"


async def purge_tombstones(args: argparse.Namespace, store: MigratableStore) -> str:
    days: int = args.older_than_days or Settings.from_env().tombstone_retention_days
    if days > MAX_RETENTION_DAYS:
        msg = f"ZKPLATFORM_TOMBSTONE_RETENTION_DAYS must be at most {MAX_RETENTION_DAYS}, not {days}"
        raise ConfigError(msg)
    purged = await store.purge_tombstones(system_clock() - days * SECONDS_PER_DAY)
    return f"purged {purged} tombstone(s) deleted more than {days} day(s) ago"


def _listed(scopes: frozenset[str]) -> str:
    return f"scopes {', '.join(sorted(scopes))}" if scopes else "no scopes"
