"""`zkplatform witness`: a C2SP tlog-witness for this server's key logs, meant to run on
another host, or by another party (docs/deploy.md#witnesses).

- `keygen --name NAME --out FILE`: a new cosignature key; the private key text goes to FILE
  (mode 0600, never over an existing file), the verifier key the server is configured with to
  standard output.
- `serve --key FILE --state FILE --log-key VKEY [--log-key VKEY ...] --bind HOST:PORT`: serve
  `POST /add-checkpoint` and `GET /healthz` with hypercorn until SIGTERM or SIGINT.

Every operator error is one line on standard error, with an exit code (below).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn, cast

from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig
from hypercorn.typing import ASGIFramework

from zkplatform.observability.logs import queued_handler
from zkplatform.server import hypercorn_fix
from zkplatform.server.workers import AddressUnavailable, listen, listening_socket
from zkplatform.setting_values import ConfigError, check_bind
from zkplatform.witness.app import WitnessApp
from zkplatform.witness.core import WitnessCore
from zkplatform.witness.state import SqliteState, StateError
from zkplatform_tlog.errors import KeyFormatError
from zkplatform_tlog.note import Cosigner, NoteVerifier, generate_cosigner_key

PROG: Final = "zkplatform witness"
DONE, FAILED, UNUSABLE, INTERRUPTED = 0, 1, 2, 130
EXIT_CODES: Final = {
    "0": "keygen: the key was written; serve: stopped by SIGTERM or SIGINT (Ctrl-C)",
    "1": "keygen: --out exists (nothing was written); serve: failed while serving",
    "2": "a usage or start-up problem (a key, a state file, a port): one line on standard error says what",
    "130": "interrupted (Ctrl-C) before it listened",
}
GRACEFUL_TIMEOUT_S: Final = 5.0
READ_TIMEOUT_S: Final = 10  # a request body that takes longer to arrive is given up

log = logging.getLogger("zkplatform.witness")


class _Refused(Exception):
    """What the operator asked cannot be done; nothing was changed (exit 1)."""


class _Unusable(Exception):
    """A flag, a file or a port that cannot be used (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not the usage too: the mistake, and where the usage is."""
        self.exit(UNUSABLE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    epilog = "exit codes:\n" + "\n".join(f"  {code:<5}{text}" for code, text in EXIT_CODES.items())
    parser = _Parser(
        prog=PROG, description=__doc__, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    keygen = commands.add_parser(
        "keygen",
        help="make a witness's cosignature key",
        description="Write a new cosignature key's private text to FILE (0600) and print its verifier key.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    keygen.add_argument("--name", required=True, help="the witness's key name, e.g. witness.example.org/w1")
    keygen.add_argument("--out", required=True, type=Path, metavar="FILE", help="where the private key goes (new)")
    serve = commands.add_parser(
        "serve",
        help="serve POST /add-checkpoint (C2SP tlog-witness) and GET /healthz",
        description="Cosign the checkpoints of the key logs the given log keys sign, with hypercorn.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--key", required=True, type=Path, metavar="FILE", help="the private key keygen wrote")
    serve.add_argument(
        "--state", required=True, type=Path, metavar="FILE", help="the SQLite file of the cosigned sizes (made if new)"
    )
    serve.add_argument(
        "--log-key",
        required=True,
        action="append",
        type=_log_key,
        metavar="VKEY",
        dest="log_keys",
        help="a log's verifier key (the server's `logKeys`); repeat for each, e.g. during a rotation",
    )
    serve.add_argument("--bind", required=True, type=_bind, metavar="HOST:PORT", help="the address to listen on")
    return parser


def _log_key(raw: str) -> NoteVerifier:
    try:
        return NoteVerifier.from_vkey(raw)
    except KeyFormatError as error:
        msg = f"{raw[:80]!r} is not a log's verifier key ({error.reason}: {error})"
        raise argparse.ArgumentTypeError(msg) from None


def _bind(raw: str) -> str:
    try:
        return check_bind(raw)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(argv: Sequence[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error the parser has explained in one line
        return stop.code if isinstance(stop.code, int) else UNUSABLE
    try:
        if args.command == "keygen":
            sys.stdout.write(keygen(args.name, args.out) + "\n")
            return DONE
        return serve(args.key, args.state, args.log_keys, args.bind)
    except _Refused as error:
        sys.stderr.write(f"{PROG}: {error}\n")
        return FAILED
    except _Unusable as error:
        sys.stderr.write(f"{PROG}: {error}\n")
        return UNUSABLE
    except KeyboardInterrupt:  # Ctrl-C before the witness listened: nothing to stop
        return INTERRUPTED


def keygen(name: str, out: Path) -> str:
    """Write a new key's private text to `out` (created 0600, never replaced); its verifier key."""
    try:
        skey, vkey = generate_cosigner_key(name)
    except KeyFormatError as error:
        msg = f"--name {name!r}: {error}"
        raise _Unusable(msg) from None
    try:
        descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        msg = f"{out} exists: keygen never replaces a key (remove it first, or choose another --out)"
        raise _Refused(msg) from None
    except OSError as error:
        msg = f"cannot write {out} ({error.strerror or error})"
        raise _Unusable(msg) from None
    with os.fdopen(descriptor, "w") as file:
        file.write(skey + "\n")
    return vkey


def serve(key: Path, state: Path, log_keys: Sequence[NoteVerifier], bind: str) -> int:
    _configure_logging()
    cosigner = _cosigner(key)
    try:
        witness_state = SqliteState.open(state)
    except StateError as error:
        raise _Unusable(str(error)) from None
    core = WitnessCore(cosigner, log_keys, witness_state)
    try:
        sock = listening_socket(bind, shared=False)
    except AddressUnavailable as error:
        raise _Unusable(str(error)) from None
    with sock:
        try:
            asyncio.run(_serve(core, sock, bind))
        except AddressUnavailable as error:
            raise _Unusable(str(error)) from None
        except Exception:
            log.exception("the witness failed while serving")
            return FAILED
    log.info("stopped")
    return DONE


def _cosigner(key: Path) -> Cosigner:
    try:
        text = key.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        msg = f"cannot read --key {key} ({why or error})"
        raise _Unusable(msg) from None
    try:
        return Cosigner.from_skey(text.strip())
    except KeyFormatError as error:
        # Never the file's text: it is a private key, or near enough to one.
        msg = f"--key {key} is not a witness's private key from `zkplatform witness keygen` ({error.reason})"
        raise _Unusable(msg) from None


async def _serve(core: WitnessCore, sock: socket.socket, bind: str) -> None:
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    config = HypercornConfig()
    config.accesslog = None  # the app logs its refusals; a cosignature needs no line
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = GRACEFUL_TIMEOUT_S
    config.read_timeout = READ_TIMEOUT_S
    hypercorn_fix.apply()
    listen(sock, bind, config.backlog)
    log.info("listening on http://%s (witness %s, logs %s)", bind, core.verifier.vkey(), ", ".join(core.log_names))
    # hypercorn closes the socket it makes from the descriptor; detached, ours will not close it again.
    config.bind = [f"fd://{sock.detach()}"]
    await hypercorn_serve(cast("ASGIFramework", WitnessApp(core)), config, shutdown_trigger=stopping.wait)


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, handlers=[queued_handler("text")])
