"""What the tests in a browser share: the distribution's Chromium (or why they skip), and a static
site for the page, served on http://localhost:PORT: another origin than the API's 127.0.0.1, so
every call the page makes is a CORS request."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import free_port

CHROMIUM = shutil.which("chromium") or next((p for p in ("/usr/bin/chromium",) if os.access(p, os.X_OK)), None)
NO_CHROMIUM = "chromium is not installed (make install installs it from Debian's packages as root)"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextmanager
def static_site(directory: Path) -> Iterator[str]:
    """`directory` served over HTTP until the block ends; its origin."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
