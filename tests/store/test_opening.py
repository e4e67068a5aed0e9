"""Opening a store: what cannot work fails at once, in one line that says what to do, and creates nothing."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.store.fake_postgres import FakePostgres
from tests.store.stores import closing, migrated, sqlite_file
from zkplatform.store import StoreOpenError, StoreURLError, display_url, kind_of, open_store
from zkplatform.store.migrations import SchemaError, latest
from zkplatform.store.postgres import connection

STARTING_UP = ("57P03", "the database system is starting up")
WRONG_PASSWORD = ("28P01", 'password authentication failed for user "postgres"')


def one_line(error: pytest.ExceptionInfo[Exception]) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def everything_under(path: Path) -> list[Path]:
    return sorted(path.rglob("*"))


# SQLite


@pytest.mark.parametrize("check_schema", [True, False])
async def test_a_file_that_is_not_a_database_is_unavailable(tmp_path: Path, check_schema: bool) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(8192))

    with pytest.raises(StoreOpenError) as error:
        await open_store(f"sqlite:///{garbage}", check_schema=check_schema)

    assert one_line(error) == f"{garbage} is not a SQLite database: choose another path, or move that file away"
    assert everything_under(tmp_path) == [garbage]


@pytest.mark.parametrize("check_schema", [True, False])
async def test_a_directory_that_cannot_be_created_is_unavailable(tmp_path: Path, check_schema: bool) -> None:
    (tmp_path / "plain").write_text("a file, not a directory")

    with pytest.raises(StoreOpenError, match="cannot create the directory of the SQLite store") as error:
        await open_store(f"sqlite:///{tmp_path}/plain/sub/zk.db", check_schema=check_schema)

    one_line(error)


async def test_a_refused_open_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "not" / "yet" / "zk.db"

    with pytest.raises(SchemaError) as error:
        await open_store(f"sqlite:///{path}")

    assert (
        one_line(error) == f"the database is not initialised: run `zkplatform admin --store sqlite:///{path} migrate`"
    )
    assert everything_under(tmp_path) == []


async def test_a_foreign_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite_file(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    before = path.read_bytes()

    with pytest.raises(SchemaError, match="not initialised"):
        await open_store(f"sqlite:///{path}")

    assert everything_under(tmp_path) == [path]  # no -wal, no -shm
    assert path.read_bytes() == before  # still in its own journal mode


async def test_the_schema_hint_names_the_store_as_an_absolute_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    await migrated("sqlite:///./var/zk.db")
    with sqlite_file(tmp_path / "var" / "zk.db") as conn:
        conn.execute("UPDATE schema_version SET version = 0")

    with pytest.raises(SchemaError) as error:
        await open_store("sqlite:///./var/zk.db")

    assert one_line(error) == (
        f"the database schema is at version 0, this build needs {latest('sqlite')}:"
        f" run `zkplatform admin --store sqlite:///{tmp_path}/var/zk.db migrate`"
    )


# PostgreSQL


def with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.netloc.rpartition('@')[2]}"))


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound but not listening: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A retry would wait far longer than any test: a failure that came at once did not retry."""
    monkeypatch.setattr(connection, "OPEN_TIMEOUT", 600.0)


async def test_a_missing_database_fails_at_once(postgres_url: str, patient: None) -> None:
    url = urlunsplit(urlsplit(postgres_url)._replace(path="/zk_no_such_database"))

    with pytest.raises(StoreOpenError) as error:
        await open_store(url)

    assert one_line(error) == (
        f'cannot open the store {url}: database "zk_no_such_database" does not exist:'
        " create the database, or correct its name in the store URL"
    )


async def test_an_unknown_user_fails_at_once_without_showing_the_password(postgres_url: str, patient: None) -> None:
    url = with_user(postgres_url, "zk_nobody:hunter2%21")

    with pytest.raises(StoreOpenError) as error:
        await open_store(url)

    message = one_line(error)
    assert message.startswith(f"cannot open the store {with_user(postgres_url, 'zk_nobody:***')}: ")
    assert message.endswith('role "zk_nobody" does not exist: check the user in the store URL')
    assert "hunter2" not in message


async def test_a_refused_connection_fails_at_once(refusing_port: int, patient: None) -> None:
    url = f"postgresql://postgres:hunter2@127.0.0.1:{refusing_port}/zk"

    with pytest.raises(StoreOpenError) as error:
        await open_store(url)

    assert one_line(error) == (
        f"cannot open the store postgresql://postgres:***@127.0.0.1:{refusing_port}/zk: Connection refused:"
        " check that the server is running, and the host and port in the store URL"
    )


async def test_wrong_credentials_are_not_retried(postgres_url: str, patient: None) -> None:
    async with FakePostgres.running(postgres_url, [WRONG_PASSWORD, WRONG_PASSWORD]) as fake:
        with pytest.raises(StoreOpenError, match=r"password authentication failed.*check the user and password"):
            await open_store(fake.url)

        assert fake.connections == 1


async def test_a_server_starting_up_is_waited_for(postgres_url: str) -> None:
    async with FakePostgres.running(postgres_url, [STARTING_UP, STARTING_UP]) as fake:
        async with closing(open_store(fake.url, check_schema=False)) as store:
            assert await store.schema_version() is None

        assert fake.connections >= 3  # two refused, then the store's own


async def test_a_server_that_stays_unready_is_given_up_in_bounded_time(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "OPEN_TIMEOUT", 0.5)
    async with FakePostgres.running(postgres_url, [STARTING_UP] * 100) as fake:
        with pytest.raises(StoreOpenError) as error:
            await open_store(fake.url)

    assert one_line(error).endswith("not ready within 0.5 s (the database system is starting up): try again later")


async def test_the_schema_hint_names_the_postgresql_store_without_its_password(postgres_url: str) -> None:
    url = with_user(postgres_url, "postgres:hunter2")

    with pytest.raises(SchemaError) as error:
        await open_store(url)

    masked = with_user(postgres_url, "postgres:***")
    assert one_line(error) == f"the database is not initialised: run `zkplatform admin --store '{masked}' migrate`"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://zk:s3cret@db:5432/zk", "postgresql://zk:***@db:5432/zk"),
        ("postgresql://zk@db/zk?password=s3cret&sslmode=require", "postgresql://zk@db/zk?password=***&sslmode=require"),
        ("sqlite:///./var/zk.db", "sqlite:///./var/zk.db"),
        ("memory:", "memory:"),
        ("postgresql://zk:s3cret@[::1:5432/zk", "postgresql://zk:***@[::1:5432/zk"),
        ("postgresql://zk:s3:cr@t@[::1/zk?Password=s3cret", "postgresql://zk:***@[::1/zk?Password=***"),
    ],
)
def test_a_printed_store_url_never_shows_a_password(url: str, shown: str) -> None:
    assert display_url(url) == shown


def test_an_unsupported_store_url_is_named_without_its_password() -> None:
    with pytest.raises(StoreURLError) as refused:
        kind_of("postgresq://zk:s3cret@db/zk")

    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    ["postgresql://zk:s3cret@[::1:5432/zk", "postgresql://zk:s3cret@db:54x32/zk", "postgresql://zk:s3cret@db:99999/zk"],
    ids=["ipv6-unclosed", "port-not-a-number", "port-out-of-range"],
)
def test_a_malformed_store_url_says_how_to_write_one_without_its_password(url: str) -> None:
    with pytest.raises(StoreURLError) as refused:
        kind_of(url)

    assert str(refused.value).startswith(f"malformed store URL '{display_url(url)}': use memory:, sqlite:///PATH or ")
    assert "s3cret" not in str(refused.value)
