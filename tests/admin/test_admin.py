"""`zkplatform admin`, run in-process through `main` on real stores.

Each `main` call is one invocation, with its own event loop and its own
connection to the store, as from a shell; so flows of several commands use
SQLite (or PostgreSQL), where the data outlives an invocation.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.connect import JSON, VAULT_DELETE, headers
from tests.e2e.server import serving, zkplatform_command
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


# migrate


def test_migrate_applies_the_schema_once(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "migrate") == 0
    assert capsys.readouterr().out == "applied migration(s) 1\n"

    assert admin(url, "migrate") == 0
    assert capsys.readouterr().out == "the schema is up to date (version 1)\n"


def test_a_store_without_schema_is_refused_with_what_to_do(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "tenant", "add", "acme") == 2

    assert "zkplatform admin --store URL migrate" in error_line(capsys)


def test_the_store_defaults_to_the_environment(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZKPLATFORM_STORE", url)

    assert main(["migrate"]) == 0
    assert admin(url, "migrate") == 0

    assert "up to date" in capsys.readouterr().out


def test_the_memory_store_lives_for_one_invocation(capsys: pytest.CaptureFixture[str]) -> None:
    assert admin("memory:", "migrate") == 0
    assert admin("memory:", "tenant", "add", "acme") == 0
    captured = capsys.readouterr()
    assert captured.out == "the schema is up to date\ntenant acme added\n"
    assert "keeps nothing" in captured.err

    # A new invocation, a new and empty store: the tenant is gone.
    assert admin("memory:", "vault", "add", "v1", "--tenant", "acme") == 1
    assert "no tenant acme; nothing was changed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("mysql://db/zk", "unsupported store"),
        ("sqlite:///{tmp}/not-a-db", "the store cannot be used: file is not a database"),
    ],
)
def test_an_unusable_store_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], store: str, says: str) -> None:
    (tmp_path / "not-a-db").write_bytes(b"this is not SQLite " * 10)

    assert admin(store.format(tmp=tmp_path), "migrate") == 2

    assert says in error_line(capsys)


# the directory


def test_a_principal_gets_scopes_within_its_roles_bound(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    member = ("principal", "add", "bob", "--tenant", "acme", "--role", "member")
    assert admin(bootstrapped, *member, "--scopes", "vault.items.read,broker.tokens.mint") == 1
    assert "the role member may not hold broker.tokens.mint" in error_line(capsys)

    assert admin(bootstrapped, *member) == 0
    assert admin(bootstrapped, "principal", "add", "ci", "--tenant", "acme", "--role", "service") == 0
    assert admin(bootstrapped, "principal", "add", "ro", "--tenant", "acme", "--role", "admin", "--scopes", "") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("as member with scopes vault.items.delete, vault.items.read, vault.items.write")
    assert out[1].endswith("as service with no scopes")
    assert out[2].endswith("as admin with no scopes")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("tenant", "add", "acme"), "tenant acme already exists"),
        (("principal", "add", "bob", "--tenant", "nope", "--role", "member"), "no tenant nope"),
        (("vault", "add", "v2", "--tenant", "acme", "--members", "alice,zed"), "no principal zed in tenant acme"),
    ],
)
def test_directory_refusals_are_exit_1(
    bootstrapped: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(bootstrapped, *args) == 1

    assert f"{says}; nothing was changed" in error_line(capsys)


@pytest.mark.parametrize(
    "args",
    [
        ("tenant", "add", "bad id"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "king"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "member", "--scopes", "vault.everything"),
        ("token", "issue", "--principal", "alice", "--ttl", "0"),
        ("purge-tombstones", "--older-than-days", "-3"),
        ("tenant",),
    ],
)
def test_bad_usage_is_exit_2(url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    assert admin(url, *args) == 2

    assert "usage: zkplatform admin" in capsys.readouterr().err


# import


def test_bootstrap_from_an_empty_sqlite_file_to_a_first_token(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap(url)
    items = ndjson(tmp_path / "items.ndjson", item("i1"), "", item("i2"))
    assert admin(url, "import", items) == 0
    assert capsys.readouterr().out.endswith("imported 2 item(s)\n")

    token = issue(url, capsys, "--principal", "alice", "--ttl", "600")

    secret = str(token["accessToken"])
    assert secret.startswith("zkp_")
    assert tokens.is_well_formed(secret)
    assert token["principalId"] == "alice"
    assert token["tenantId"] == "acme"
    assert token["role"] == "ROLE_OWNER"
    assert token["scopes"] == ["broker.tokens.mint", "vault.items.delete", "vault.items.read", "vault.items.write"]
    record = asyncio.run(stored_token(url, secret))
    assert record is not None
    assert record.token_id == token["tokenId"]
    assert record.expires_at - record.issued_at == 600
    assert (Path(Settings.from_env().state_dir) / "token-pepper").exists()
    stored = asyncio.run(stored_items(url))
    assert set(stored) == {"i1", "i2"}
    assert stored["i1"].updated_at == 1_767_225_600  # 2026-01-01T00:00:00Z


def test_the_bootstrap_works_on_postgresql(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap(postgres_url)
    assert admin(postgres_url, "import", ndjson(tmp_path / "items.ndjson", item("i1"))) == 0

    token = issue(postgres_url, capsys, "--principal", "alice", "--scopes", "vault.items.read")

    assert token["scopes"] == ["vault.items.read"]
    assert asyncio.run(stored_token(postgres_url, str(token["accessToken"]))) is not None
    assert set(asyncio.run(stored_items(postgres_url))) == {"i1"}


def test_a_token_issued_by_admin_works_with_the_server(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert admin(bootstrapped, "import", ndjson(tmp_path / "items.ndjson", item("i1"))) == 0
    secret = str(issue(bootstrapped, capsys, "--principal", "alice")["accessToken"])

    # The same state directory: the server finds the pepper the token was issued under.
    with serving(tmp_path, "--store", bootstrapped, env={"ZKPLATFORM_STATE_DIR": str(tmp_path / "state")}) as server:
        response = httpx.post(
            server.base_url + VAULT_DELETE,
            json={"vaultId": "v1", "itemId": "i1", "baseVersion": "1"},
            headers=headers(JSON, secret),
            timeout=30,
        )
        log = server.log()

    assert response.status_code == 200, response.text
    assert response.json()["item"]["deleted"] is True
    assert secret not in log


def test_a_bad_line_names_its_number_and_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [item(i) for i in IDS]
    lines[2] = item("")

    assert admin(bootstrapped, "import", ndjson(tmp_path / "bad.ndjson", *lines)) == 1

    assert error_line(capsys) == "zkplatform admin: line 3: itemId: value is required; nothing was changed\n"
    assert asyncio.run(stored_items(bootstrapped)) == {}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"itemId": "i2",', "line 2: not JSON: Expecting property name enclosed in double quotes at column 17"),
        ("[1, 2]", "line 2: not a JSON object"),
        ('{"itemId": "i2", "itemId": "i3"}', "line 2: not JSON: the key 'itemId' appears twice"),
        (json.dumps(item("i2", surprise=1)), 'line 2: not an Item: Message type "platform.v1.Item" has no field'),
        (json.dumps(item("i2", version=1.5)), "line 2: not an Item: Failed to parse version field"),
        (json.dumps(item("i2", updatedAt="2026-01-01T00:00:00.5Z")), "line 2: updatedAt: must be whole seconds"),
        (json.dumps(item("i2", version="0")), "line 2: version: must be greater than or equal to 1"),
        (json.dumps(item("i2", kind="Bad Kind")), "line 2: kind:"),
        (json.dumps(item("i2", deleted=True)), "line 2: a deleted item carries no payload"),
        (json.dumps(item("i1")), "line 2: item i1 of vault v1 is already on line 1"),
    ],
)
def test_a_malformed_line_is_refused_with_its_reason(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, says: str
) -> None:
    path = ndjson(tmp_path / "one.ndjson", item("i1"), line, item("i3"))

    assert admin(bootstrapped, "import", path) == 1

    assert says in error_line(capsys)
    assert asyncio.run(stored_items(bootstrapped)) == {}


def test_a_line_that_is_not_utf8_is_refused(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.ndjson"
    latin1 = json.dumps(item("i2", titleHash="\xe9"), ensure_ascii=False).encode("latin-1")
    path.write_bytes(json.dumps(item("i1")).encode() + b"\n" + latin1)

    assert admin(bootstrapped, "import", str(path)) == 1

    assert "line 2: not UTF-8 text" in error_line(capsys)


def test_a_duplicate_of_a_stored_item_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert admin(bootstrapped, "import", ndjson(tmp_path / "first.ndjson", item("i1"))) == 0
    capsys.readouterr()

    assert admin(bootstrapped, "import", ndjson(tmp_path / "again.ndjson", item("i2"), item("i1"), item("i3"))) == 1

    assert "item i1 in vault v1 already exists; nothing was changed" in error_line(capsys)
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i1"}


def test_an_unknown_vault_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ndjson(tmp_path / "far.ndjson", item("i1"), item("i2", vaultId="v9"))

    assert admin(bootstrapped, "import", path) == 1

    assert "no vault v9 in tenant acme; nothing was changed" in error_line(capsys)
    assert asyncio.run(stored_items(bootstrapped)) == {}


def test_import_reads_standard_input(
    bootstrapped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = "\n".join(json.dumps(item(i)) for i in ("i1", "i2", "i3")) + "\n\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data.encode())))

    assert admin(bootstrapped, "import", "-") == 0

    assert capsys.readouterr().out == "imported 3 item(s)\n"
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i1", "i2", "i3"}


def test_a_large_file_shows_its_progress_on_a_terminal(
    bootstrapped: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("zkplatform.admin.importer.PROGRESS_FROM_BYTES", 100)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)

    assert admin(bootstrapped, "import", ndjson(tmp_path / "big.ndjson", item("i1"), item("i2"))) == 0

    captured = capsys.readouterr()
    assert "checking: 100%" in captured.err
    assert captured.out == "imported 2 item(s)\n"


def test_a_missing_file_is_exit_2(bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "import", str(tmp_path / "nowhere.ndjson")) == 2

    assert "nowhere.ndjson: No such file or directory" in error_line(capsys)


# tokens


@pytest.fixture
def token(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return issue(bootstrapped, capsys, "--principal", "alice")


def test_token_revoke(bootstrapped: str, token: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "revoke", str(token["tokenId"])) == 0

    assert capsys.readouterr().out == f"token {token['tokenId']} revoked\n"
    record = asyncio.run(stored_token(bootstrapped, str(token["accessToken"])))
    assert record is not None
    assert record.revoked


def test_revoking_an_unknown_token_is_exit_1(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "revoke", "tok_nope") == 1

    assert "no token tok_nope; nothing was changed" in error_line(capsys)


def test_a_secret_given_to_revoke_is_not_repeated(
    bootstrapped: str, token: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    secret = str(token["accessToken"])

    assert admin(bootstrapped, "token", "revoke", secret) == 1

    error = error_line(capsys)
    assert "not its id" in error
    assert secret not in error
    record = asyncio.run(stored_token(bootstrapped, secret))
    assert record is not None
    assert not record.revoked


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--principal", "nobody"), "no principal nobody"),
        (("--principal", "ci", "--scopes", "vault.items.read"), "principal ci may not hold vault.items.read"),
    ],
)
def test_token_issue_refusals_are_exit_1(
    bootstrapped: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(bootstrapped, "principal", "add", "ci", "--tenant", "acme", "--role", "service") == 0
    capsys.readouterr()

    assert admin(bootstrapped, "token", "issue", *args) == 1

    assert says in error_line(capsys)


def test_a_bad_pepper_is_exit_2(
    bootstrapped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZKPLATFORM_TOKEN_PEPPER", "c2hvcnQ")

    assert admin(bootstrapped, "token", "issue", "--principal", "alice") == 2

    assert "ZKPLATFORM_TOKEN_PEPPER must encode at least" in error_line(capsys)


# tombstones


def test_purge_tombstones_forgets_only_old_ones(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ndjson(
        tmp_path / "t.ndjson",
        tombstone("i1", "2020-01-01T00:00:00Z"),
        tombstone("i2", "2099-01-01T00:00:00Z"),
        item("i3", updatedAt="2020-01-01T00:00:00Z"),
    )
    assert admin(bootstrapped, "import", path) == 0
    capsys.readouterr()

    assert admin(bootstrapped, "purge-tombstones") == 0

    assert capsys.readouterr().out == "purged 1 tombstone(s) deleted more than 90 day(s) ago\n"
    assert set(asyncio.run(stored_items(bootstrapped))) == {"i2", "i3"}


def test_purge_retention_from_the_flag_or_the_environment(
    bootstrapped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZKPLATFORM_TOMBSTONE_RETENTION_DAYS", "30")
    assert admin(bootstrapped, "purge-tombstones") == 0
    assert admin(bootstrapped, "purge-tombstones", "--older-than-days", "7") == 0

    assert capsys.readouterr().out.splitlines() == [
        "purged 0 tombstone(s) deleted more than 30 day(s) ago",
        "purged 0 tombstone(s) deleted more than 7 day(s) ago",
    ]


# the console script


def test_help_through_the_console_script() -> None:
    for args in (["admin", "--help"], ["admin", "token", "issue", "--help"]):
        result = subprocess.run([zkplatform_command(), *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: zkplatform {' '.join(args[:-1])}")
