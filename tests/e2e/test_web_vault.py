"""The web vault page (clients/web-vault, built by `make web-vault`) in headless Chromium, through
its own UI: fields filled, buttons clicked, the DOM read (tests/e2e/browser/ui.mjs, playwright-core,
one browser for the module).

The page is served from http://localhost:PORT and the API by a real `serve --dev` on
http://127.0.0.1:OTHER allowing that origin (--cors-origins), so every call is a CORS request, as
under `make dev`. Signed in with the credentials file's JSON, the page lists the caller's vaults and
a vault's items, follows it live (a change made by another client appears, through WatchChanges),
opens a sealed item with the caller's demo device against the key log it verified (kept in
IndexedDB), seals a new item that the Python package opens, and shares an item with a member who
then opens it. A wrong token, or a server that does not answer, is an error on the page. After
every test: no page error, and no token in a request's URL or on the console.

`make dev`'s script (scripts/dev_server.py) serves the page and the API together and stops both on
Ctrl-C. Without Chromium the browser tests skip and say why."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from tests.builds import make
from tests.clients.test_sealing_interop import new_device, principal, python_open, python_seal, signed_by
from tests.e2e.pages import CHROMIUM, NO_CHROMIUM, needs_chromium, static_site
from tests.e2e.server import Server, eventually, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
TS_CLIENT = ROOT / "clients" / "ts"
PAGE = ROOT / "build" / "web-vault"
UI = Path(__file__).resolve().parent / "browser" / "ui.mjs"
VAULT = "acme-shared"
ANSWER_S = 120.0  # one UI command, the driver's own 60 s wait included, on a busy machine


@pytest.fixture(scope="module")
def page_dir(ts_build: Path) -> Path:
    """build/web-vault, from the current sources (ts_build first: the package the page imports)."""
    make("web-vault")
    return PAGE


@pytest.fixture(scope="module")
def page_origin(page_dir: Path) -> Iterator[str]:
    """The page's static server, on another origin than the API's."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    with static_site(page_dir) as origin:
        yield origin


@pytest.fixture(scope="module")
def server(page_origin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """serve --dev allowing the page's origin, and only it."""
    with serving(tmp_path_factory.mktemp("web-vault"), "--dev", "--cors-origins", page_origin) as server:
        yield server


@pytest.fixture(scope="module")
def credentials_file(server: Server) -> Path:
    return server.log_path.parent / "var" / "dev-credentials.json"


def tokens(credentials_file: Path) -> list[str]:
    document = json.loads(credentials_file.read_text())
    return [p["token"] for tenant in document["tenants"] for p in tenant["principals"]]


class Browser:
    """The UI driver (ui.mjs): a command in, its answer out, each within ANSWER_S."""

    def __init__(self, stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            ["node", str(UI), str(TS_CLIENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert self.process.stdout is not None
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.lines.put(line)
        self.lines.put(b"")  # the driver ended

    def __call__(self, **command: Any) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()
        line = self.lines.get(timeout=ANSWER_S)
        assert line, f"the UI driver ended (status {self.process.poll()}) at {command}"
        reply: dict[str, Any] = json.loads(line)
        assert "error" not in reply, f"{command}: {reply['error']}"
        return reply["answer"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # the driver closes the browser at the end of its input
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="module")
def browser(page_origin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    log = tmp_path_factory.mktemp("ui") / "ui.log"
    with log.open("wb") as stderr:
        driver = Browser(stderr)
        try:
            yield driver
        finally:
            driver.close()


@pytest.fixture
def page(browser: Browser, page_origin: str, credentials_file: Path) -> Iterator[Browser]:
    """The page, loaded afresh; afterwards no page error, and no token in a URL or on the console."""
    browser(goto=f"{page_origin}/")
    yield browser
    events = browser(events=True)
    assert events["pageErrors"] == []
    assert any(url.startswith(page_origin) for url in events["requests"])
    # Counted, never shown: a failure here must not print the token it found.
    places = events["requests"] + events["console"]
    leaks = sum(token in place for token in tokens(credentials_file) for place in places)
    assert leaks == 0, "a token is in a request's URL or on the console"


def sign_in(page: Browser, credentials_file: Path, principal_id: str) -> None:
    """With the credentials file's JSON pasted and the principal chosen, as a developer does."""
    page(fill="#credentials", value=credentials_file.read_text())
    page(select="#principal", value=principal_id)
    page(click="#sign-in-button")
    page(wait="#whoami", hasText=f"as {principal_id}, device")


def open_vault(page: Browser, vault_id: str = VAULT) -> None:
    page(click=f"#vaults button[data-vault='{vault_id}']")
    page(wait="#sync-status", hasText="live")


def listed(page: Browser) -> list[str]:
    items: list[str] = page(attributes="#items tr", name="data-item")
    return items


@needs_chromium
def test_a_wrong_token_or_no_server_shows_an_error(page: Browser, server: Server) -> None:
    page(fill="#base-url", value=server.base_url)
    page(fill="#token", value="zkp_not-a-token-of-this-server")
    page(click="#sign-in-button")
    page(wait="#error")
    refused = page(text="#error-text")
    page(fill="#base-url", value=f"http://127.0.0.1:{free_port()}")  # nothing listens there
    page(click="#sign-in-button")
    page(wait="#error-text", hasText="No answer from")
    unreachable = page(text="#error-text")

    assert refused.startswith("The server refused the token: unauthenticated")
    assert unreachable.startswith("No answer from http://127.0.0.1:")
    assert "--cors-origins" in unreachable
    page(wait="#sign-in")  # still the sign-in form, never a blank page
    page(wait="#vault-view", state="hidden")


@needs_chromium
def test_a_token_alone_lists_the_vaults_and_items_and_opens_nothing(
    page: Browser, server: Server, credentials_file: Path
) -> None:
    page(fill="#base-url", value=server.base_url)
    page(fill="#token", value=principal(credentials_file, "alice")["token"])
    page(click="#sign-in-button")
    page(wait="#whoami", hasText="with a token alone")
    open_vault(page, "acme-private")

    assert page(texts="#vaults li") == ["acme-private members: alice", "acme-shared members: alice, bob, dave"]
    assert {f"item-{n}" for n in range(1, 7)} <= set(listed(page))
    assert None not in page(attributes="#items tr button", name="disabled")  # no keys, nothing opens
    assert page(attributes="#create-button", name="disabled") == [""]


@needs_chromium
def test_the_vaults_and_items_are_listed_and_a_sealed_item_opens(page: Browser, credentials_file: Path) -> None:
    sign_in(page, credentials_file, "bob")
    open_vault(page)
    page(click="#items tr[data-item='item-2'] button")
    page(wait="#item")

    assert page(texts="#vaults li") == ["acme-shared members: alice, bob, dave"]  # bob's only vault
    assert {f"item-{n}" for n in range(1, 7)} <= set(listed(page))
    assert json.loads(page(text="#plaintext")) == {
        "title": "Note 2 of acme-shared",
        "text": "Shared with alice, bob, dave.",
    }
    alice_device = principal(credentials_file, "alice")["deviceId"]
    assert page(text="#sealed-by") == f"alice, device {alice_device}, live"
    assert page(text="#whoami").startswith(f"Signed in to {json.loads(credentials_file.read_text())['baseUrl']} as bob")


@needs_chromium
def test_an_item_sealed_in_the_page_opens_in_python(page: Browser, server: Server, credentials_file: Path) -> None:
    sign_in(page, credentials_file, "alice")
    open_vault(page)
    page(fill="#new-item-id", value="from-the-page")
    page(fill="#new-item-text", value="sealed in the page")
    page(click="#create-button")
    page(wait="#status", hasText="Created from-the-page")
    page(wait="#items tr[data-item='from-the-page']")  # its own change, back through the watch

    by_dave = asyncio.run(python_open(server, credentials_file, "dave", "from-the-page"))

    assert page(text="#status") == "Created from-the-page, sealed for alice, bob, dave (3 devices)"
    assert by_dave == {"opened": "sealed in the page", "sealedBy": signed_by(credentials_file, "alice")}


@needs_chromium
def test_an_item_shared_in_the_page_opens_for_the_new_member(
    page: Browser, server: Server, credentials_file: Path
) -> None:
    asyncio.run(
        python_seal(server, credentials_file, "alice", "to-share", "for dave soon", sealed_for=("alice", "bob"))
    )
    before = asyncio.run(python_open(server, credentials_file, "dave", "to-share"))
    sign_in(page, credentials_file, "alice")
    open_vault(page)
    page(click="#items tr[data-item='to-share'] button")
    page(wait="#plaintext", hasText="for dave soon")
    page(select="#share-with", value="dave")
    page(click="#share-button")
    page(wait="#status", hasText="Shared to-share with dave")

    after = asyncio.run(python_open(server, credentials_file, "dave", "to-share"))

    assert before == {"refused": "NOT_A_RECIPIENT"}
    assert page(text="#status") == "Shared to-share with dave: version 2"
    assert after == {"opened": "for dave soon", "sealedBy": signed_by(credentials_file, "alice")}


@needs_chromium
def test_a_change_by_another_client_appears_live(page: Browser, server: Server, credentials_file: Path) -> None:
    sign_in(page, credentials_file, "bob")
    open_vault(page)
    assert "from-python" not in listed(page)

    asyncio.run(python_seal(server, credentials_file, "alice", "from-python", "sealed in Python"))
    page(wait="#items tr[data-item='from-python']")
    alice = principal(credentials_file, "alice")
    deleted = httpx.post(
        f"{server.base_url}/platform.v1.VaultService/DeleteItem",
        json={"vaultId": VAULT, "itemId": "from-python", "baseVersion": "1"},
        headers={"Authorization": f"Bearer {alice['token']}", "Connect-Protocol-Version": "1"},
        timeout=30,
    )
    assert deleted.status_code == 200, deleted.text
    page(wait="#items tr[data-item='from-python']", state="detached")

    assert page(text="#sync-status") == "live"
    page(click="#items tr[data-item='item-4'] button")  # still opens: the page was never reloaded
    page(wait="#item")
    assert json.loads(page(text="#plaintext"))["title"] == "Note 4 of acme-shared"


@needs_chromium
def test_a_key_log_that_does_not_verify_is_an_error_until_forgotten(
    page: Browser, page_origin: str, tmp_path: Path
) -> None:
    port = free_port()
    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        directory.mkdir()
    with serving(first, "--dev", "--cors-origins", page_origin, port=port) as server:
        credentials = first / "var" / "dev-credentials.json"
        alice = principal(credentials, "alice")
        # The log grows by a device, and the page verifies it so: size 5, kept in IndexedDB.
        asyncio.run(new_device(server, credentials, alice, "X25519", "alice-tablet.jwe"))
        sign_in(page, credentials, "alice")
        page(click="#sign-out")
    # `make dev` started again where the page expects it: a new log of 4 entries, a rollback to it.
    with serving(second, "--dev", "--cors-origins", page_origin, port=port):
        page(fill="#credentials", value=(second / "var" / "dev-credentials.json").read_text())
        page(select="#principal", value="alice")
        page(click="#sign-in-button")
        page(wait="#forget-key-log")
        refused = page(text="#error-text")
        page(click="#forget-key-log")
        page(wait="#status", hasText="The verified key logs are forgotten")
        page(click="#sign-in-button")
        page(wait="#whoami", hasText="as alice, device")

    assert refused.startswith("The key log does not verify, so none of its keys is trusted: ")


# --- make dev: the page and the API together ------------------------------------------------------


def test_make_devs_script_serves_the_page_and_the_api_and_stops_both_on_ctrl_c(page_dir: Path, tmp_path: Path) -> None:
    api, page_port = free_port(), free_port()
    origin = f"http://localhost:{page_port}"
    log = tmp_path / "dev.log"
    command = [sys.executable, "-m", "scripts.dev_server", "--page", str(page_dir), "--page-port", str(page_port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--", "--bind", f"127.0.0.1:{api}"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own, as a terminal's foreground job
        )
    try:
        assert eventually(lambda: f"listening on http://127.0.0.1:{api} " in log.read_text(), 30), log.read_text()
        page = httpx.get(f"http://127.0.0.1:{page_port}/", timeout=10)
        script = httpx.get(f"http://127.0.0.1:{page_port}/app.js", timeout=10)
        preflight = httpx.options(
            f"http://127.0.0.1:{api}/platform.v1.VaultService/ListVaults",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
            timeout=10,
        )
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals its foreground group
        status = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    output = log.read_text()

    assert status == 0, output
    assert (
        output.splitlines()[0]
        == f"dev: the web vault page is on {origin}/ (sign in with a token of var/dev-credentials.json)"
    )
    assert "<title>zkplatform web vault</title>" in page.text
    assert script.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == origin
    assert (tmp_path / "var" / "dev-credentials.json").exists()
    assert "stopped" in output.splitlines()[-1]
    # Nothing left behind: the server (in a session of its own) and the page's server are gone.
    assert [pid for pid in running() if f"127.0.0.1:{api}" in pid[1]] == []
    for port in (api, page_port):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=10)


def running() -> list[tuple[int, str]]:
    """Every process's id and command line (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            found.append((int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
        except (ValueError, OSError):
            continue
    return found
