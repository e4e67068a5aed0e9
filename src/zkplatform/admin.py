"""`zkplatform admin`: operator commands, with direct access to a store.

This is the only way to a first token outside development mode (`token
issue`), like a root token at initialisation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from google.protobuf import json_format
from tqdm import tqdm

from zkplatform.app import Platform
from zkplatform.config import DEFAULT_STORE, ConfigError, Settings
from zkplatform.domain.clock import system_clock
from zkplatform.domain.errors import DomainError
from zkplatform.domain.models import Principal, Role, Scope, Tenant, Vault
from zkplatform.importer import BadLine, read_items
from zkplatform.pepper import load_pepper
from zkplatform.repository import AlreadyExists, UnknownReference
from zkplatform.rpc.convert import token_to_proto
from zkplatform.store import MigratableStore, StoreURLError, open_store
from zkplatform.store.migrations import SchemaError

# The id format of the contract (proto/.../vault.proto): ids made here must be usable in requests.
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
PROGRESS_FROM_BYTES = 1 << 20
Command = Callable[[argparse.Namespace, MigratableStore], Awaitable[None]]


class Refused(Exception):
    """Bad input: one line for the operator, exit code 1."""


def _id(raw: str) -> str:
    if not ID.fullmatch(raw):
        msg = f"{raw!r} is not an id: 1 to 64 of [A-Za-z0-9._:-], the first alphanumeric"
        raise argparse.ArgumentTypeError(msg)
    return raw


def _ids(raw: str) -> list[str]:
    return [_id(part) for part in raw.split(",") if part]


def _scopes(raw: str) -> list[Scope]:
    try:
        return [Scope(part) for part in raw.split(",") if part]
    except ValueError:
        msg = f"scopes are a comma-separated list of {', '.join(s.value for s in Scope)}"
        raise argparse.ArgumentTypeError(msg) from None


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        msg = f"must be a positive whole number, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(raw)


async def _migrate(args: argparse.Namespace, store: MigratableStore) -> None:
    applied = await store.migrate()
    print(f"applied migrations {', '.join(map(str, applied))}" if applied else "the schema is up to date")


async def _add_tenant(args: argparse.Namespace, store: MigratableStore) -> None:
    await store.add_tenant(Tenant(args.tenant_id))
    print(f"tenant {args.tenant_id} added")


async def _add_principal(args: argparse.Namespace, store: MigratableStore) -> None:
    role = Role(args.role)
    scopes = role.default_scopes if args.scopes is None else frozenset(args.scopes)
    if beyond := scopes - role.scope_bound:
        msg = f"a {role.value} may not hold {', '.join(sorted(beyond))}"
        raise Refused(msg)
    await store.add_principal(Principal(args.principal_id, args.tenant, role, scopes))
    print(f"principal {args.principal_id} ({role.value}: {' '.join(sorted(scopes)) or 'no scopes'}) added")


async def _add_vault(args: argparse.Namespace, store: MigratableStore) -> None:
    await store.add_vault(Vault(args.vault_id, args.tenant, frozenset(args.members)))
    print(f"vault {args.vault_id} added")


def _read_import(args: argparse.Namespace) -> None:
    """Check the whole file before the store is touched (a progress bar for large files)."""
    if args.file == "-":
        args.items = read_items(sys.stdin.buffer)
        return
    path = Path(args.file)
    quiet = path.stat().st_size < PROGRESS_FROM_BYTES or not sys.stderr.isatty()
    with (
        path.open("rb") as source,
        tqdm(
            total=path.stat().st_size, unit="B", unit_scale=True, desc="checking", disable=quiet, file=sys.stderr
        ) as bar,
    ):
        args.items = read_items(source, bar.update)


async def _import(args: argparse.Namespace, store: MigratableStore) -> None:
    await store.add_items(args.items)  # one transaction: all or nothing
    print(f"imported {len(args.items)} item(s)")


async def _issue_token(args: argparse.Namespace, store: MigratableStore) -> None:
    settings = Settings.from_env()
    platform = Platform.build(store, load_pepper(settings.token_pepper, settings.state_dir))
    principal = await store.get_principal(args.principal)
    if principal is None:
        msg = f"no principal {args.principal}"
        raise Refused(msg)
    issued = await platform.issuer.issue(principal, args.ttl, args.scopes)
    token = json_format.MessageToDict(token_to_proto(issued, principal.role))
    print(json.dumps(token, separators=(",", ":")))  # the secret is shown here, once


async def _revoke_token(args: argparse.Namespace, store: MigratableStore) -> None:
    if not await store.revoke_token_id(args.token_id):
        msg = f"no token {args.token_id}"
        raise Refused(msg)
    print(f"token {args.token_id} revoked")


async def _purge(args: argparse.Namespace, store: MigratableStore) -> None:
    days = args.older_than_days or Settings.from_env().tombstone_retention_days
    purged = await store.purge_tombstones(system_clock() - days * 86_400)
    print(f"purged {purged} tombstone(s) deleted more than {days} day(s) ago")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkplatform admin", description=__doc__)
    parser.add_argument(
        "--store", default=None, metavar="URL", help=f"the store (default: $ZKPLATFORM_STORE or {DEFAULT_STORE})"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    migrate = commands.add_parser("migrate", help="create or upgrade the schema")
    migrate.set_defaults(run=_migrate, migrating=True)

    tenant = commands.add_parser("tenant", help="tenants").add_subparsers(dest="action", required=True)
    add = tenant.add_parser("add", help="add a tenant")
    add.add_argument("tenant_id", type=_id)
    add.set_defaults(run=_add_tenant)

    principal = commands.add_parser("principal", help="principals").add_subparsers(dest="action", required=True)
    add = principal.add_parser("add", help="add a principal to a tenant")
    add.add_argument("principal_id", type=_id)
    add.add_argument("--tenant", type=_id, required=True)
    add.add_argument("--role", choices=[r.value for r in Role], required=True)
    add.add_argument("--scopes", type=_scopes, help="what it may hold (default: all its role allows; none for service)")
    add.set_defaults(run=_add_principal)

    vault = commands.add_parser("vault", help="vaults").add_subparsers(dest="action", required=True)
    add = vault.add_parser("add", help="add a vault to a tenant")
    add.add_argument("vault_id", type=_id)
    add.add_argument("--tenant", type=_id, required=True)
    add.add_argument("--members", type=_ids, default=[], help="comma-separated principal ids")
    add.set_defaults(run=_add_vault)

    importing = commands.add_parser("import", help="import items from NDJSON (one proto3 JSON Item per line)")
    importing.add_argument("file", help="the file, or - for standard input")
    importing.set_defaults(run=_import, prepare=_read_import)

    token = commands.add_parser("token", help="tokens").add_subparsers(dest="action", required=True)
    issue = token.add_parser("issue", help="issue a token for a principal and print it as JSON (the bootstrap)")
    issue.add_argument("--principal", type=_id, required=True)
    issue.add_argument("--ttl", type=_positive, default=3600, metavar="SECONDS", help="lifetime (default 3600)")
    issue.add_argument("--scopes", type=_scopes, help="default: every scope the principal may hold")
    issue.set_defaults(run=_issue_token)
    revoke = token.add_parser("revoke", help="revoke a token by its public id (tokenId)")
    revoke.add_argument("token_id")
    revoke.set_defaults(run=_revoke_token)

    purge = commands.add_parser("purge-tombstones", help="forget tombstones older than the retention")
    purge.add_argument(
        "--older-than-days", type=_positive, metavar="N", help="default: $ZKPLATFORM_TOMBSTONE_RETENTION_DAYS or 90"
    )
    purge.set_defaults(run=_purge)
    return parser


async def _run(args: argparse.Namespace) -> None:
    url = args.store or Settings.from_env().store_url
    store = await open_store(url, check_schema=not getattr(args, "migrating", False))
    try:
        await args.run(args, store)
    finally:
        await store.close()


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        if prepare := getattr(args, "prepare", None):
            prepare(args)
        asyncio.run(_run(args))
    except (Refused, BadLine, AlreadyExists, UnknownReference, DomainError) as error:
        print(f"zkplatform admin: {error}; nothing was changed", file=sys.stderr)
        return 1
    except (StoreURLError, SchemaError, ConfigError, OSError) as error:
        print(f"zkplatform admin: {error}", file=sys.stderr)
        return 2
    return 0
