"""`zkplatform serve` once its settings are read: checks, the port, the workers, hypercorn."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import cast

from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig
from hypercorn.typing import ASGIFramework

from zkplatform.app import create_app
from zkplatform.config import ConfigError, Settings
from zkplatform.domain.auth import Authenticator
from zkplatform.observability.tracing import TracingConfigError, check_env
from zkplatform.pepper import load_pepper
from zkplatform.server import hypercorn_fix, tls_port
from zkplatform.server.listener import Listener
from zkplatform.server.log_setup import configure_logging
from zkplatform.server.metrics_port import LeakRevoker, metrics_port
from zkplatform.server.open_files import raise_open_files_limit
from zkplatform.server.startup import check_transparency, local_log_key_made, prepare_store
from zkplatform.server.workers import AddressUnavailable, hold_address, listen, listening_socket, run_workers
from zkplatform.store import StoreOpenError, StoreURLError, display_url
from zkplatform.store.migrations import SchemaError

log = logging.getLogger("zkplatform")

# Conditions a user can cause and fix: one line on standard error, exit code 2.
STARTUP_ERRORS = (ConfigError, StoreURLError, StoreOpenError, SchemaError, AddressUnavailable, TracingConfigError)
# What a worker may take beyond the grace period to close its store and exit, before it is killed.
STOP_MARGIN_S = 15.0


@dataclasses.dataclass(frozen=True, slots=True)
class Serving:
    """How this server runs, beside the application's settings: where, in how many processes, how it logs."""

    bind: str
    workers: int
    listener: Listener
    log_level: str
    log_format: str
    migrate: bool = False


def serve(settings: Settings, serving: Serving) -> int:
    """Check everything, take the port, serve until stopped; the exit code."""
    listener = serving.listener
    log.debug(
        "settings: store %s, body limit %d bytes, body read timeout %d s, %d streams per worker, state in %s",
        display_url(settings.store_url),
        settings.max_body_bytes,
        settings.body_read_timeout_seconds,
        settings.max_streams,
        settings.state_dir,
    )
    listener.check()
    check_env()
    raise_open_files_limit(settings.max_streams)  # before the workers start: they inherit it
    check_transparency(settings)
    # Fail on unusable settings here, before binding the port or spawning workers.
    asyncio.run(prepare_store(settings.store_url, migrate=serving.migrate))
    local_log_key_made(settings)  # after the store: beside a database that is there
    try:
        load_pepper(settings.token_pepper, settings.state_dir)
    except OSError as error:
        msg = f"cannot keep the token pepper in {settings.state_dir} ({error.strerror or error}): "
        raise ConfigError(msg + "set ZKPLATFORM_STATE_DIR to a writable directory") from None
    os.environ.update(settings.to_env())  # the worker processes read these

    def listening() -> None:
        log.info(
            "listening on %s://%s (%d worker(s), store %s%s)",
            listener.scheme,
            serving.bind,
            serving.workers,
            display_url(settings.store_url),
            ", development mode" if settings.dev else "",
        )

    revoker = LeakRevoker(settings)
    signal.signal(signal.SIGHUP, _ignore_hangup)
    # The lock first, so a second server on the port is told so; then the address, bound
    # whatever the worker count, so a taken address fails before anything starts.
    with (
        contextlib.closing(hold_address(serving.bind)) as lock,
        contextlib.closing(listening_socket(serving.bind, shared=serving.workers > 1)) as sock,
        metrics_port(settings.metrics_bind, serving.workers, revoker.screen),
    ):
        if serving.workers == 1:
            signals = (signal.SIGINT, signal.SIGTERM)
            asyncio.run(_serve_app(sock, serving.bind, listener, listening, signals, started=revoker.serving))
            code = 0
        else:  # sock stays bound, never listening: only listening sockets are given connections
            worker = functools.partial(
                _worker, log_level=serving.log_level, log_format=serving.log_format, listener=listener
            )
            stop_timeout = listener.graceful_timeout + STOP_MARGIN_S
            code = run_workers(serving.workers, serving.bind, worker, listening, stop_timeout=stop_timeout, lock=lock)
    log.info("stopped")
    return code


def _ignore_hangup(_signum: int, _frame: FrameType | None) -> None:
    """A terminal's hangup must not end the server without its graceful stop; and it
    reads its settings only as it starts, so there is nothing to reload."""
    log.warning("SIGHUP ignored: to change the settings, stop the server (SIGTERM) and start it again")


def _worker(bind: str, ready: Callable[[], None], *, log_level: str, log_format: str, listener: Listener) -> None:
    """One of several worker processes: the application on a listening socket of its own."""
    configure_logging(log_level, log_format)
    try:
        sock = listening_socket(bind)
        # the parent relays Ctrl-C as SIGTERM
        asyncio.run(_serve_app(sock, bind, listener, ready, (signal.SIGTERM,)))
    except STARTUP_ERRORS as error:
        print(f"zkplatform: worker {os.getpid()}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


async def _serve_app(  # noqa: PLR0913 # started: for the metrics port, one worker only
    sock: socket.socket,
    bind: str,
    listener: Listener,
    ready: Callable[[], None],
    stop_signals: tuple[signal.Signals, ...],
    *,
    started: Callable[[asyncio.AbstractEventLoop, Authenticator], None] | None = None,
) -> None:
    """Start the application, then listen, then tell `ready`; serve until a stop signal.

    On a stop signal hypercorn stops accepting, closes idle connections and
    lets the calls in flight finish within the grace period; open streams are
    ended at once (they would otherwise hold the stop for all of it)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in stop_signals:
        loop.add_signal_handler(sig, stopping.set)
    app = create_app()
    # The application's start-up (opening the store) runs here, before listening,
    # so that `ready` means both; hypercorn's lifespan then finds nothing left to start.
    await app.startup()
    if started is not None and app.platform is not None:
        started(loop, app.platform.authenticator)

    async def stopped() -> None:
        await stopping.wait()
        calls, streams = app.stop()
        log.info(
            "stopping: %d call(s) in flight finish within %g s; %d open stream(s) end now",
            calls,
            listener.graceful_timeout,
            streams,
        )

    try:
        if stopping.is_set():
            return
        config = hypercorn_config(listener)
        hypercorn_fix.apply()
        tls_port.apply()
        listen(sock, bind, config.backlog)
        ready()
        # hypercorn closes the socket it makes from the descriptor; detached, ours will not close it a second time.
        config.bind = [f"fd://{sock.detach()}"]
        await hypercorn_serve(cast("ASGIFramework", app), config, shutdown_trigger=stopped)
    finally:
        await app.shutdown()


def hypercorn_config(listener: Listener) -> HypercornConfig:
    config = HypercornConfig()
    config.accesslog = None  # an access log would record query strings, where tokens may leak
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: ours
    config.graceful_timeout = listener.graceful_timeout
    # Our listen() and asyncio's start_server (which listens again on the socket it is given) both use it.
    config.backlog = listener.backlog
    if listener.certfile is not None and listener.keyfile is not None:
        # With both set, hypercorn serves the descriptor in `bind` with TLS, offering
        # HTTP/2 first in ALPN: what gRPC clients require.
        config.certfile, config.keyfile = listener.certfile, listener.keyfile
        config.alpn_protocols = ["h2", "http/1.1"]
    return config
