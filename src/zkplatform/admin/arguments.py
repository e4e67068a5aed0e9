"""The command line of `zkplatform admin`: its commands, flags and the checks on their values."""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Callable

from zkplatform.admin import audit, commands, keys
from zkplatform.config import DEFAULT_STORE
from zkplatform.domain.models import Role, Scope, ScopeEdit

# The contract's id format (proto/.../vault.proto): ids made here must be usable in requests.
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
DEFAULT_TTL_SECONDS = 3600
# Ten years: ample for an operator's token, and its expiry stays a valid timestamp.
MAX_TTL_SECONDS = 10 * 365 * 86_400
MAX_SEQUENCE = 2**63 - 1  # the stores' integers

DESCRIPTION = """\
Operator commands, acting directly on a store. `token issue` is the only way
to a first token outside development mode, like a root token at
initialisation; every other token is minted from one through the API.
"""
STORE_HELP = (
    "sqlite:///PATH, postgresql://... or memory:, before or after the command"
    f" (default: $ZKPLATFORM_STORE or {DEFAULT_STORE})"
)
EPILOG = """\
exit codes: 0 done; 1 refused input (nothing was changed), or a break found
by `audit verify`; 2 bad usage, an unusable store, or a schema other than this
build's (run `migrate`).
"""


@functools.cache
def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 # the whole command table, read top to bottom
    """The whole command line, built once a process: parsing leaves it as it was, and building
    it (a parser a command, each looking up its messages' translations) cost more than many a
    command itself, and the tests run hundreds in one process."""
    parser = argparse.ArgumentParser(
        prog="zkplatform admin",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--store", default=None, metavar="URL", help=STORE_HELP)
    # --store is also taken after the command (`tenant add acme --store URL`), as operators write it.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--store", dest="store_after", default=None, metavar="URL", help=STORE_HELP)
    subcommands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="one of these (each has --help):"
    )

    def command(
        within: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str, description: str = ""
    ) -> argparse.ArgumentParser:
        return within.add_parser(name, help=help_text, description=description or help_text, parents=[after])

    migrate = command(
        subcommands,
        "migrate",
        "create the schema, or upgrade it to this build's",
        "Create the schema in an empty database, or apply the migrations it lacks. Running it again is harmless.",
    )
    migrate.set_defaults(run=commands.migrate)

    tenant = _group(subcommands, "tenant", "manage tenants")
    add = command(tenant, "add", "add a tenant")
    add.add_argument("tenant_id", type=_id, metavar="TENANT_ID", help="the new tenant's id")
    add.set_defaults(run=commands.add_tenant)
    listed = command(tenant, "list", "list every tenant")
    _table_flag(listed)
    listed.set_defaults(run=commands.list_tenants)

    principal = _group(subcommands, "principal", "manage principals")
    add = command(
        principal,
        "add",
        "add a principal to a tenant",
        "Add a principal to a tenant, with scopes within its role's bound: owner and admin may hold"
        " every scope, member every scope but broker.tokens.mint, service what it is granted.",
    )
    add.add_argument("principal_id", type=_id, metavar="PRINCIPAL_ID", help="the new principal's id")
    add.add_argument("--tenant", type=_id, required=True, metavar="T", help="its tenant")
    add.add_argument("--role", choices=[r.value for r in Role], required=True, help="its role")
    add.add_argument(
        "--scopes",
        type=_scopes,
        metavar="a,b,...",
        help="the scopes it may hold, within its role's bound"
        " (default: all the role allows; none for a service; '' for none)",
    )
    add.set_defaults(run=commands.add_principal)
    listed = command(principal, "list", "list a tenant's principals, with their roles, scopes and state")
    listed.add_argument("--tenant", type=_id, required=True, metavar="T", help="the tenant")
    _table_flag(listed)
    listed.set_defaults(run=commands.list_principals)
    scopes = command(
        principal,
        "scopes",
        "set, add or remove scopes of a principal; print it as `principal list` does",
        "Change the scopes a principal is granted, within its role's bound (as `principal add` checks them),"
        " in one transaction with its audit event. A scope removed is refused to its existing tokens from"
        " their next call, and ends their open watches if it is vault.items.read. A token keeps the scopes it"
        " was made with, so a scope added reaches only tokens made afterwards: issued (`token issue` gives"
        " every scope the principal has), or minted from a token that holds it. Prints the principal as"
        " `principal list` does, and on standard error what changed, or that nothing was.",
    )
    scopes.add_argument("principal_id", type=_id, metavar="PRINCIPAL_ID", help="the principal's id")
    scopes.add_argument("--tenant", type=_id, required=True, metavar="T", help="its tenant")
    edits = scopes.add_mutually_exclusive_group(required=True)
    for flag, edit, help_text in (
        ("--scopes", ScopeEdit.SET, "exactly these scopes, replacing its grant ('' for none)"),
        ("--add", ScopeEdit.ADD, "these scopes as well as those it has"),
        ("--remove", ScopeEdit.REMOVE, "all it has but these scopes"),
    ):
        edits.add_argument(flag, dest=f"scopes_{edit}", type=_scopes, metavar="a,b,...", help=help_text)
    _table_flag(scopes)
    scopes.set_defaults(run=commands.change_principal_scopes)
    disable = command(
        principal,
        "disable",
        "offboard a principal: revoke all its tokens (and every token minted from them) and refuse it new ones",
        "Disable a principal: every token it holds is revoked, with every token minted from them, in one"
        " transaction, and no token is issued or minted for it until `principal enable`.",
    )
    disable.add_argument("principal_id", type=_id, metavar="PRINCIPAL_ID", help="the principal's id")
    disable.set_defaults(run=commands.disable_principal)
    enable = command(
        principal,
        "enable",
        "let a disabled principal be issued tokens again (its revoked tokens stay revoked)",
    )
    enable.add_argument("principal_id", type=_id, metavar="PRINCIPAL_ID", help="the principal's id")
    enable.set_defaults(run=commands.enable_principal)

    vault = _group(subcommands, "vault", "manage vaults")
    add = command(vault, "add", "add a vault to a tenant")
    add.add_argument("vault_id", type=_id, metavar="VAULT_ID", help="the new vault's id")
    add.add_argument("--tenant", type=_id, required=True, metavar="T", help="its tenant")
    add.add_argument(
        "--members", type=_ids, default=[], metavar="p1,p2,...", help="principals of the same tenant (default: none)"
    )
    add.set_defaults(run=commands.add_vault)
    listed = command(vault, "list", "list a tenant's vaults and their members")
    listed.add_argument("--tenant", type=_id, required=True, metavar="T", help="the tenant")
    _table_flag(listed)
    listed.set_defaults(run=commands.list_vaults)
    member = _group(vault, "member", "add or remove a vault's members")
    for action, run, help_text in (
        ("add", commands.add_vault_member, "make a principal of the vault's tenant a member of it"),
        ("remove", commands.remove_vault_member, "remove a member: refused on the vault from its next call"),
    ):
        change = command(member, action, help_text)
        change.add_argument("vault_id", type=_id, metavar="VAULT_ID", help="the vault")
        change.add_argument("principal_id", type=_id, metavar="PRINCIPAL_ID", help="the principal")
        change.set_defaults(run=run)

    importing = command(
        subcommands,
        "import",
        "import items, all or nothing, from NDJSON: one platform.v1.Item per line in proto3 JSON",
        "Check every line first, reporting each bad one; import only when all are good, in one transaction.",
    )
    importing.add_argument("file", metavar="FILE", help="the NDJSON file, or - for standard input")
    importing.add_argument(
        "--dry-run",
        action="store_true",
        help="check the file and that its vaults exist, store nothing; exit code 0 when it can be imported",
    )
    importing.set_defaults(run=commands.import_items)

    token = _group(subcommands, "token", "issue, list, show and revoke tokens")
    issue = command(
        token,
        "issue",
        "issue a token for a principal and print it as JSON (its secret is shown this once)",
        "Issue a token and print it as proto3 JSON on standard output. Use the server's"
        " ZKPLATFORM_TOKEN_PEPPER or ZKPLATFORM_STATE_DIR, or the server will not recognise it.",
    )
    issue.add_argument("--principal", type=_id, required=True, metavar="P", help="the principal's id")
    issue.add_argument(
        "--ttl",
        type=_bounded(MAX_TTL_SECONDS),
        default=DEFAULT_TTL_SECONDS,
        metavar="SECONDS",
        help=f"lifetime in seconds (default {DEFAULT_TTL_SECONDS}, at most {MAX_TTL_SECONDS}: ten years)",
    )
    issue.add_argument("--scopes", type=_scopes, metavar="a,b,...", help="default: every scope the principal may hold")
    issue.set_defaults(run=commands.issue_token)
    revoke = command(
        token,
        "revoke",
        "revoke a token by its public id (its tokenId, tok_...), and every token minted from it",
    )
    revoke.add_argument("token_id", metavar="TOKEN_ID", help="the tokenId printed with the token, never its secret")
    revoke.set_defaults(run=commands.revoke_token)
    listed = command(
        token,
        "list",
        "list a principal's tokens, newest first, live or not, with their state (never a secret)",
    )
    listed.add_argument("--principal", type=_id, required=True, metavar="P", help="the principal's id")
    _table_flag(listed)
    listed.set_defaults(run=commands.list_tokens)
    show = command(token, "show", "show one token by its public id (never its secret)")
    show.add_argument("token_id", metavar="TOKEN_ID", help="the tokenId (tok_...)")
    _table_flag(show)
    show.set_defaults(run=commands.show_token)

    key = _group(subcommands, "keys", "the key directory: list devices, reset a principal, verify a key log")
    listed = command(key, "list", "list a tenant's devices, live and revoked, with their state")
    listed.add_argument("--tenant", type=_id, required=True, metavar="T", help="the tenant")
    listed.add_argument("--principal", type=_id, metavar="P", help="only this principal's devices (default: all)")
    _table_flag(listed)
    listed.set_defaults(run=keys.list_devices)
    reset = command(
        key,
        "reset",
        "revoke every device of a principal by a reset signed with the log key; print its key log entry",
        "Append a PrincipalReset to the tenant's key log, signed by the server's log keys"
        " (ZKPLATFORM_LOG_KEY_FILES, or the SQLite store's own key): every device of the principal is"
        " revoked, and its next device publishes as a first device. Every client shows the reset. For a"
        " principal who lost every device. Prints the entry as JSON; the witnesses are sent the new"
        " checkpoint at the server's next round.",
    )
    reset.add_argument("principal_id", type=_id, metavar="PRINCIPAL", help="the principal's id")
    reset.add_argument("--tenant", type=_id, required=True, metavar="T", help="its tenant")
    reset.set_defaults(run=keys.reset_principal)
    log = command(
        key,
        "log",
        "verify a tenant's key log, then print it as NDJSON: one entry a line, in index order",
        "Check every entry of the tenant's key log (canonical, of the tenant, matching its leaf hash) and"
        " compute its Merkle root, then print its entries (from --since). An entry edited or removed"
        " behind the store's back is named instead; exit code 1.",
    )
    log.add_argument("--tenant", type=_id, required=True, metavar="T", help="the tenant")
    log.add_argument(
        "--since",
        type=_sequence,
        default=0,
        metavar="N",
        help="print only the entries from index N (default 0: all); the whole log is verified anyway",
    )
    _table_flag(log)
    log.set_defaults(run=keys.key_log)

    purge = command(subcommands, "purge-tombstones", "forget tombstones deleted longer ago than the retention")
    purge.add_argument(
        "--older-than-days",
        type=_bounded(commands.MAX_RETENTION_DAYS, lower=0),
        metavar="N",
        help="the retention in days; 0 purges every tombstone now"
        " (default: $ZKPLATFORM_TOMBSTONE_RETENTION_DAYS or 90)",
    )
    purge.set_defaults(run=commands.purge_tombstones)

    epoch = _group(subcommands, "epoch", "the store's epoch: the identity of its history, which cursors belong to")
    rotate = command(
        epoch,
        "rotate",
        "give the store a new epoch: a step of every restore from a backup, before the servers start again",
        "Replace the store's epoch with a new random one, and record it in every tenant's audit trail. Clients"
        " that resume from a cursor or a page token of the old epoch are then told to list their vaults again"
        " (CURSOR_EXPIRED), instead of taking the restored store's new changes for ones they have and missing"
        " them. Run it after every restore from a backup; at any other time it only makes every client list"
        " again.",
    )
    rotate.set_defaults(run=commands.rotate_epoch)

    trail = _group(subcommands, "audit", "export and verify the audit trail")
    export = command(
        trail,
        "export",
        "print the audit trail as NDJSON: one event a line, by tenant, in sequence order",
        "Print every tenant's events (or one tenant's) on standard output, one JSON object a line:"
        " tenant, sequence, time, actor, action, target, requestId and the event's chain hash (hex).",
    )
    export.add_argument("--tenant", type=_id, metavar="T", help="only this tenant's events (default: every tenant's)")
    export.add_argument(
        "--since",
        type=_sequence,
        default=0,
        metavar="N",
        help="only the events after sequence number N of each tenant's chain (default 0: all)",
    )
    export.set_defaults(run=audit.export)
    verify = command(
        trail,
        "verify",
        "recompute each tenant's hash chain; exit code 1 naming the first event that does not match",
        "Recompute every tenant's chain (or one tenant's) from its first event to its head. An event edited,"
        " removed or added behind the store's back is named, with its tenant; exit code 1.",
    )
    verify.add_argument("--tenant", type=_id, metavar="T", help="only this tenant's chain (default: every tenant's)")
    verify.set_defaults(run=audit.verify)
    return parser


def _table_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", action="store_true", help="an aligned table instead of one JSON object a line")


def store_url(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The --store given, before or after the command; None for the default. Two different
    ones are bad usage: acting on either could be acting on the wrong database."""
    before: str | None = args.store
    after: str | None = args.store_after
    if before and after and before != after:
        parser.error("--store is given twice, with two different URLs: give it once")
    return after or before


def _group(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """A command made of subcommands, such as `tenant add`."""
    group = subcommands.add_parser(name, help=help_text, description=help_text)
    return group.add_subparsers(
        dest="action",
        required=True,
        metavar="ACTION",
        help="one of these (each has --help):",
    )


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


def _sequence(raw: str) -> int:
    """A place in an audit chain: a whole number, 0 for before its first event."""
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQUENCE:
        msg = f"must be a whole number from 0 to {MAX_SEQUENCE}, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(raw)


def _bounded(upper: int, lower: int = 1) -> Callable[[str], int]:
    """A whole number from `lower` to `upper`, as an argparse type."""

    def whole(raw: str) -> int:
        if not (raw.isascii() and raw.isdigit()) or not lower <= int(raw) <= upper:
            msg = f"must be a whole number from {lower} to {upper}, not {raw!r}"
            raise argparse.ArgumentTypeError(msg)
        return int(raw)

    return whole
