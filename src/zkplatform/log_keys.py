"""The server's key-transparency files: its log keys (note private keys, docs/key-transparency.md)
and its list of witnesses.

A log key comes from the files ZKPLATFORM_LOG_KEY_FILES names (each holding one private key in
the `PRIVATE+KEY+<name>+<key id>+<base64>` text of signed-note; every one signs each checkpoint;
during a rotation, the old one and the new one). Without them: on the SQLite store the server
makes one beside the database (`<db>.log-key`, readable only by its owner) and its verifier key
(`<db>.log-key.pub`), the first time it starts, so that a fresh clone serves a verifiable log; the
memory store gets a new key each time; PostgreSQL, whose servers may be many, refuses to start
without one made on purpose (`zkplatform log-key generate`).

The witnesses file (ZKPLATFORM_WITNESSES_FILE) has one witness a line: its cosignature verifier
key and its URL, separated by spaces (`<name>+<key id>+<base64> https://witness.example/w1`);
blank lines and lines starting with `#` are skipped. A file, not a variable, because verifier keys
hold `+`, `/` and `=`.

Messages name files and what is wrong, never a key's private text.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from zkplatform.config import DEFAULT_LOG_NAME, ConfigError, Settings
from zkplatform.domain.checkpoints import LogKeys
from zkplatform.store import StoreURLError, kind_of, sqlite_path
from zkplatform_tlog.errors import KeyFormatError
from zkplatform_tlog.note import CosignatureVerifier, NoteSigner, generate_signer_key

log = logging.getLogger(__name__)

LOG_KEY_SUFFIX = ".log-key"
VERIFIER_KEY_SUFFIX = ".pub"
MAX_KEY_FILE_BYTES = 4096
MAX_WITNESSES = 100
GENERATE_HINT = (
    "make one with `zkplatform log-key generate --name NAME --out FILE`"
    " and name it in ZKPLATFORM_LOG_KEY_FILES (or --log-key-files)"
)


@dataclass(frozen=True, slots=True)
class WitnessConfig:
    """A witness the server pushes to: its cosignature key and its URL (submission prefix)."""

    verifier: CosignatureVerifier
    url: str


def read_log_keys(paths: Sequence[Path]) -> LogKeys:
    """The log keys of those files, the first first; ConfigError naming the file and the fault."""
    signers = tuple(_read_signer(path) for path in paths)
    try:
        return LogKeys(signers)
    except ValueError as error:
        raise ConfigError(f"ZKPLATFORM_LOG_KEY_FILES: {error}") from None


def _read_signer(path: Path) -> NoteSigner:
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as error:
        msg = f"cannot read the log key file {path} ({error.strerror or error})"
        raise ConfigError(msg) from None
    why = "not a key's text"
    if len(raw) <= MAX_KEY_FILE_BYTES and raw.isascii():
        try:
            return NoteSigner.from_skey(raw.decode("ascii").strip())
        except KeyFormatError as error:
            why = error.reason
    msg = f"the log key file {path} holds no Ed25519 note private key ({why}): {GENERATE_HINT}"
    raise ConfigError(msg)


def local_key_path(store_url: str) -> Path | None:
    """Where the server keeps the log key it makes for a SQLite store; None for other stores."""
    try:
        if kind_of(store_url) != "sqlite":
            return None
    except StoreURLError:
        return None
    database = sqlite_path(store_url)
    return None if database is None else database.with_name(database.name + LOG_KEY_SUFFIX)


def log_keys_for(settings: Settings) -> LogKeys:
    """The log keys the settings give, or the one the store's kind calls for (see the module)."""
    if settings.log_key_files:
        return read_log_keys(settings.log_key_files)
    path = local_key_path(settings.store_url)
    if path is not None:
        keys, _ = local_log_key(path, settings.log_name)
        return keys
    if kind_of(settings.store_url) == "memory":
        return ephemeral_log_keys(settings.log_name)
    msg = f"no log key: the key log of a PostgreSQL store is signed with a key made on purpose: {GENERATE_HINT}"
    raise ConfigError(msg)


def ephemeral_log_keys(name: str = DEFAULT_LOG_NAME) -> LogKeys:
    """A new log key kept nowhere: for a store that is itself gone at exit (memory:)."""
    skey, _ = generate_signer_key(name)
    return LogKeys((NoteSigner.from_skey(skey),))


def local_log_key(path: Path, name: str) -> tuple[LogKeys, bool]:
    """The log key kept at `path`, made first (with its verifier key beside it) when there is
    none; and whether it was made now."""
    created = False
    if not path.exists():
        skey, vkey = generate_signer_key(name)
        created = _write_new(path, skey)
        if created:
            path.with_name(path.name + VERIFIER_KEY_SUFFIX).write_text(vkey + "\n")
    return read_log_keys([path]), created


def generate_key_file(name: str, out: Path) -> str:
    """A new log key written to `out` (which must not exist), readable only by its owner; its
    verifier key. ConfigError for a bad name or a file that cannot be made."""
    try:
        skey, vkey = generate_signer_key(name)
    except KeyFormatError:
        msg = f"{name!r} cannot be a key name: no spaces, no '+', no control characters"
        raise ConfigError(msg) from None
    try:
        if not _write_new(out, skey):
            msg = f"{out} exists: the log key it holds is kept; name another file"
            raise ConfigError(msg)
    except OSError as error:
        msg = f"cannot write the log key to {out} ({error.strerror or error})"
        raise ConfigError(msg) from None
    return vkey


def _write_new(path: Path, text: str) -> bool:
    """Write a new file completely, then link it into place, readable only by its owner: when
    several workers start at once, exactly one key wins and every one reads it whole. False
    when the file existed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(text + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            draft.unlink()
    return True


def read_witnesses(path: Path) -> list[WitnessConfig]:
    """The witnesses a witnesses file lists; ConfigError naming the file and line at fault."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        msg = f"cannot read the witnesses file {path} ({why or error})"
        raise ConfigError(msg) from None
    witnesses: list[WitnessConfig] = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        witnesses.append(_witness(path, number, text))
    names = [witness.verifier.name for witness in witnesses]
    if len(set(names)) != len(names):
        msg = f"{path}: two witnesses have the same key name: each witness needs a name of its own"
        raise ConfigError(msg)
    if len(witnesses) > MAX_WITNESSES:
        msg = f"{path}: at most {MAX_WITNESSES} witnesses"
        raise ConfigError(msg)
    return witnesses


def _witness(path: Path, number: int, text: str) -> WitnessConfig:
    where = f"{path} line {number}"
    parts = text.split()
    if len(parts) != 2:  # a key and a URL
        msg = f"{where}: expected '<cosignature verifier key> <url>'"
        raise ConfigError(msg)
    vkey, url = parts
    try:
        verifier = CosignatureVerifier.from_vkey(vkey)
    except KeyFormatError as error:
        msg = f"{where}: not a witness's cosignature/v1 verifier key ({error.reason})"
        raise ConfigError(msg) from None
    try:
        parts_of_url = urlsplit(url)
        ok = parts_of_url.scheme in ("http", "https") and bool(parts_of_url.hostname) and not parts_of_url.query
    except ValueError:
        ok = False
    if not ok:
        msg = f"{where}: the witness URL must be http(s)://HOST[:PORT][/PATH], not {url!r}"
        raise ConfigError(msg)
    return WitnessConfig(verifier, url)


def witness_quorum(settings: Settings, witnesses: Sequence[WitnessConfig]) -> int:
    """The quorum the settings ask, within the witnesses configured (default: all of them)."""
    if settings.witness_quorum is None:
        return len(witnesses)
    if settings.witness_quorum > len(witnesses):
        msg = (
            f"ZKPLATFORM_WITNESS_QUORUM is {settings.witness_quorum}, but {len(witnesses)} witness(es)"
            " are configured: a quorum cannot be more than the witnesses"
        )
        raise ConfigError(msg)
    return settings.witness_quorum
