"""What the tests of `zkplatform admin` share: running it in-process through `main` on real stores.

Each `main` call is one invocation, with its own event loop and its own
connection to the store, as from a shell; so flows of several commands use
SQLite (or PostgreSQL), where the data outlives an invocation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zkplatform.admin import main
from zkplatform.config import Settings
from zkplatform.domain import tokens
from zkplatform.domain.models import Item, TokenRecord
from zkplatform.pepper import load_pepper
from zkplatform.store import open_store

ITEM: dict[str, object] = {
    "tenantId": "acme",
    "vaultId": "v1",
    "version": "1",
    "kind": "note",
    "titleHash": "dGl0bGU",
    "updatedAt": "2026-01-01T00:00:00Z",
    "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "aad": "", "ciphertext": "Y2lwaGVy", "version": 1},
    "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
}
IDS = ("i1", "i2", "i3", "i4", "i5")


def item(item_id: str, **fields: object) -> dict[str, object]:
    return {**ITEM, "itemId": item_id, **fields}


def tombstone(item_id: str, updated_at: str) -> dict[str, object]:
    """A deleted item as the contract has it: no payload, no keys, no title."""
    dead = item(item_id, deleted=True, titleHash="", wrappedKeys=[], updatedAt=updated_at)
    del dead["encryptedPayload"]
    return dead


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only what each test sets: the pepper file goes to tmp_path, never to ./var."""
    monkeypatch.setenv("ZKPLATFORM_STATE_DIR", str(tmp_path / "state"))
    for name in ("ZKPLATFORM_STORE", "ZKPLATFORM_TOKEN_PEPPER", "ZKPLATFORM_TOMBSTONE_RETENTION_DAYS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/x.db"


def admin(url: str, *args: str) -> int:
    return main(["--store", url, *args])


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command said on stderr, checked to be exactly one line."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("zkplatform admin: "), err
    assert "Traceback" not in err
    return err


def ndjson(path: Path, *lines: dict[str, object] | str) -> str:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def bootstrap(url: str) -> None:
    assert admin(url, "migrate") == 0
    assert admin(url, "tenant", "add", "acme") == 0
    assert admin(url, "principal", "add", "alice", "--tenant", "acme", "--role", "owner") == 0
    assert admin(url, "vault", "add", "v1", "--tenant", "acme", "--members", "alice") == 0


@pytest.fixture
def bootstrapped(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    bootstrap(url)
    capsys.readouterr()
    return url


async def stored_items(url: str) -> dict[str, Item]:
    store = await open_store(url)
    try:
        return {i: found for i in IDS if (found := await store.get_item("v1", i))}
    finally:
        await store.close()


async def stored_token(url: str, secret: str) -> TokenRecord | None:
    """The token as the server would find it: with the pepper of the same environment."""
    settings = Settings.from_env()
    hasher = tokens.TokenHasher(load_pepper(settings.token_pepper, settings.state_dir))
    store = await open_store(url)
    try:
        return await store.find_token(hasher(secret))
    finally:
        await store.close()


def issue(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    """`token issue`: the token it printed, alone on standard output."""
    capsys.readouterr()
    assert admin(url, "token", "issue", *args) == 0
    token: dict[str, object] = json.loads(capsys.readouterr().out)
    return token
