"""The Prometheus metrics port, served by the process that listens for the API, and how a
token seen in one of its URLs is revoked."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

from prometheus_client import REGISTRY

from zkplatform.config import Settings
from zkplatform.domain.auth import Authenticator
from zkplatform.observability.metrics import MetricsListener, Screen, multiprocess_registry
from zkplatform.rpc.front.leaked_tokens import leaks_in
from zkplatform.server.workers import AddressUnavailable
from zkplatform.wiring import platform_from

log = logging.getLogger("zkplatform")

# How long a metrics request waits for the serving loop to revoke a token in its URL.
_REVOKE_WAIT_S = 10.0


class LeakRevoker:
    """How the metrics port revokes a token seen in its URL: by the API's own path
    (Authenticator.revoke_leaked), on the serving loop when the application runs in this
    process (one worker, the memory store included), else on the store opened for it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._serving: tuple[asyncio.AbstractEventLoop, Authenticator] | None = None

    def serving(self, loop: asyncio.AbstractEventLoop, authenticator: Authenticator) -> None:
        self._serving = (loop, authenticator)

    def screen(self, path: str, query: bytes) -> bool:
        """Called on the metrics listener's threads: True when the URL carried a token (revoked)."""
        places, found = leaks_in(path, query)
        if found:
            try:
                if self._serving is None:
                    asyncio.run(self._revoke_on_own_store(found))
                else:
                    loop, authenticator = self._serving
                    asyncio.run_coroutine_threadsafe(authenticator.revoke_leaked(found), loop).result(_REVOKE_WAIT_S)
            except Exception as error:  # noqa: BLE001 # the refusal goes out whatever happened (a stopping loop)
                log.error("a token sent in a metrics URL could not be revoked (%s)", type(error).__name__)  # noqa: TRY400
        return bool(places)

    async def _revoke_on_own_store(self, found: list[str]) -> None:
        platform = await platform_from(self._settings)
        try:
            await platform.authenticator.revoke_leaked(found)
        finally:
            await platform.close()


@contextlib.contextmanager
def metrics_port(bind: str | None, workers: int, screen: Screen | None = None) -> Iterator[None]:
    """The metrics listener, served by this process: with several workers, from
    the files they write into a directory made for this server (removed at exit)."""
    if bind is None:
        yield
        return
    with contextlib.ExitStack() as stack:
        registry = stack.enter_context(multiprocess_registry()) if workers > 1 else REGISTRY
        try:
            metrics = MetricsListener.start(bind, registry, screen)
        except OSError as error:
            msg = f"cannot serve metrics on {bind} ({error.strerror or error}): choose another --metrics-bind"
            raise AddressUnavailable(msg) from None
        stack.callback(metrics.close)
        log.info("metrics on http://%s/metrics", bind)
        yield
