"""`make dev`: the development server and the web vault page, started and stopped together.

Serves the built page (`make web-vault`: build/web-vault) on http://localhost:PORT from a thread of
this process (http.server, bound to 127.0.0.1), runs `zkplatform serve --dev --cors-origins
http://localhost:PORT` followed by the arguments given after `--` (make's ARGS), and prints one
line saying where the page is. The page is another origin than the API (127.0.0.1:8080), so its
calls are real CORS requests.

The server runs in a session of its own, so that a signal reaches it once, from here: Ctrl-C
(SIGINT) or SIGTERM to this process is passed on to it, this process waits for it to stop, then
closes the page's server and exits with the server's status. Nothing outlives it.

    python -m scripts.dev_server [--page DIR] [--page-port 8081] [-- SERVE_ARGS...]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any


class PageHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, without a line per request on the server's terminal."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 # http.server's name
        pass


def zkplatform() -> str:
    """The console script beside this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "zkplatform"
    return str(beside) if beside.exists() else shutil.which("zkplatform") or "zkplatform"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", type=Path, default=Path("build/web-vault"), help="the built page's directory")
    parser.add_argument("--page-port", type=int, default=8081, help="the page's port on localhost (default 8081)")
    parser.add_argument("serve_args", nargs="*", help="after --: more arguments of zkplatform serve")
    args = parser.parse_args(argv)
    if not (args.page / "index.html").is_file():
        print(f"dev: no page in {args.page}: run make web-vault", file=sys.stderr)
        return 2
    handler = functools.partial(PageHandler, directory=str(args.page))
    try:
        page = http.server.ThreadingHTTPServer(("127.0.0.1", args.page_port), handler)
    except OSError as error:
        print(f"dev: cannot serve the page on 127.0.0.1:{args.page_port} ({error.strerror}):", end=" ", file=sys.stderr)
        print("give another port, e.g. make dev WEB_VAULT_PORT=8082", file=sys.stderr)
        return 2
    origin = f"http://localhost:{args.page_port}"
    pages = threading.Thread(target=page.serve_forever, name="web-vault-page", daemon=True)
    pages.start()
    server: subprocess.Popen[bytes] | None = None
    received: list[int] = []

    def pass_on(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        if server is not None:
            server.send_signal(signum)

    signal.signal(signal.SIGINT, pass_on)
    signal.signal(signal.SIGTERM, pass_on)
    try:
        command = [zkplatform(), "serve", "--dev", "--cors-origins", origin, *args.serve_args]
        server = subprocess.Popen(command, start_new_session=True)
        if received:  # a signal that came before the server was there
            server.send_signal(received[-1])
        print(f"dev: the web vault page is on {origin}/ (sign in with a token of var/dev-credentials.json)", flush=True)
        status = server.wait()
    finally:
        page.shutdown()
        page.server_close()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
