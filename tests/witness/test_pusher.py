"""The server's pusher (domain/witnessing.py) against real witnesses in process (the core, or the
ASGI app behind HttpWitness) and a real store (memory and SQLite): cosignatures reached, kept
only when they verify, 409s followed, and a witness that fails never holding up the others."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.store.stores import closing, migrated
from tests.witness.conftest import START, Clock, cosigner
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.checkpoints import Checkpoints, LogKeys
from zkplatform.domain.key_log import RevokeDevices
from zkplatform.domain.models import Tenant
from zkplatform.domain.ports.key_log import KeyLogRepository
from zkplatform.domain.witnessing import Witness, WitnessPusher
from zkplatform.store import MigratableStore, open_store
from zkplatform.witness.app import WitnessApp
from zkplatform.witness.core import WitnessCore
from zkplatform.witness.endpoints import HttpWitness, InProcessWitness
from zkplatform.witness.state import MemoryState
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import leaf_hash, root_hash
from zkplatform_tlog.note import CosignatureVerifier, NoteSignature, NoteSigner, generate_signer_key
from zkplatform_tlog.witness_wire import encode_add_checkpoint, parse_cosignatures

KEYS = LogKeys((NoteSigner.from_skey(generate_signer_key("keys.example.test")[0]),))
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MigratableStore]:
    url = "memory:" if request.param == "memory" else f"sqlite:///{tmp_path}/store.db"
    await migrated(url)
    async with closing(open_store(url)) as opened:
        for tenant_id in ("acme", "globex"):
            await opened.add_tenant(Tenant(tenant_id), Actor.operator(START))
        yield opened


async def grow(store: KeyLogRepository, tenant_id: str, entries: int) -> int:
    """Append `entries` made-up entries to the tenant's log; its new size."""
    size = await store.key_log_size(tenant_id)
    for _ in range(entries):
        change = RevokeDevices("nobody", (), START)
        event = (Action.DEVICE_REVOKED, {"principal": "nobody"})
        appended = await store.append_key_log(
            tenant_id,
            size,
            f"{tenant_id} entry {size}".encode(),
            change=change,
            event=event,
            actor=Actor.operator(START),
        )
        assert appended == size + 1
        size += 1
    return size


class Witnesses:
    """Real witnesses of KEYS, each with its own key, state and clock, in process."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.cores: dict[str, WitnessCore] = {}
        self.states: dict[str, MemoryState] = {}

    def core(self, name: str) -> WitnessCore:
        if name not in self.cores:
            self.states[name] = MemoryState()
            self.cores[name] = WitnessCore(cosigner(name), KEYS.verifiers(), self.states[name], self.clock)
        return self.cores[name]

    def in_process(self, name: str) -> Witness:
        core = self.core(name)
        return Witness(InProcessWitness(core, name), core.verifier)

    def over_http(self, name: str, app: Any = None) -> Witness:
        """The witness's ASGI app (or `app`, standing in front of it) behind HttpWitness."""
        core = self.core(name)
        transport = httpx.ASGITransport(app=app or WitnessApp(core))
        url = f"http://{name.partition('/')[0]}"
        return Witness(HttpWitness(url, client=httpx.AsyncClient(transport=transport)), core.verifier)


def pusher(store: KeyLogRepository, witnesses: list[Witness], *, timeout: float = 10.0) -> WitnessPusher:
    checkpoints = Checkpoints(store, KEYS, [witness.name for witness in witnesses], len(witnesses))
    return WitnessPusher(store, witnesses, checkpoints.latest, Clock(), timeout=timeout)


def body(tenant_id: str, store_size: int) -> str:
    hashes = [_leaf(tenant_id, index) for index in range(store_size)]
    return Checkpoint(KEYS.origin(tenant_id), store_size, root_hash(hashes)).body()


def _leaf(tenant_id: str, index: int) -> bytes:
    return leaf_hash(f"{tenant_id} entry {index}".encode())


async def cosigned(store: KeyLogRepository, tenant_id: str, witnesses: list[Witness]) -> dict[str, int]:
    """The sizes each witness's saved cosignatures of the tenant reach, each line checked again."""
    sizes = await store.witness_sizes(tenant_id)
    for witness in witnesses:
        if witness.name in sizes:
            size, (saved,) = await store.served_checkpoint(tenant_id, [witness.name], 1)
            assert witness.verifier.verify_line(body(tenant_id, size), saved.line) == saved.cosigned_at
    return sizes


async def test_push_reaches_a_cosignature_from_every_witness(store: MigratableStore) -> None:
    witnesses = Witnesses()
    chosen = [witnesses.in_process("w1.test/a"), witnesses.over_http("w2.test/b")]
    size = await grow(store, "acme", 5)

    await pusher(store, chosen).push("acme")

    assert await cosigned(store, "acme", chosen) == {"w1.test/a": size, "w2.test/b": size}
    served, cosignatures = await store.served_checkpoint("acme", ["w1.test/a", "w2.test/b"], 2)
    assert (served, [c.cosigned_at for c in cosignatures]) == (5, [START, START])
    assert await store.witness_sizes("globex") == {}


async def test_a_grown_log_is_pushed_with_a_proof_from_the_witness_size(store: MigratableStore) -> None:
    witnesses = Witnesses()
    chosen = [witnesses.in_process("w1.test/a"), witnesses.over_http("w2.test/b")]
    push = pusher(store, chosen)
    await grow(store, "acme", 3)
    await push.push("acme")

    size = await grow(store, "acme", 10)
    await push.push("acme")

    assert await cosigned(store, "acme", chosen) == {"w1.test/a": size, "w2.test/b": size}
    for state in witnesses.states.values():
        assert (await state.held(KEYS.origin("acme"))).size == 13


async def test_pushing_again_keeps_cosignatures_fresh(store: MigratableStore) -> None:
    witnesses = Witnesses()
    chosen = [witnesses.in_process("w1.test/a")]
    push = pusher(store, chosen)
    await grow(store, "acme", 2)
    await push.push("acme")

    witnesses.clock.now += 300
    await push.push("acme")

    _, (cosignature,) = await store.served_checkpoint("acme", ["w1.test/a"], 1)
    assert cosignature.cosigned_at == START + 300


async def test_a_409_is_followed_from_the_size_the_witness_holds(store: MigratableStore) -> None:
    """Another server of the same log (another host on one database) pushed to the witness
    first: this one's store does not know, sends old 0, and is told the size."""
    witnesses = Witnesses()
    chosen = [witnesses.over_http("w1.test/a")]
    await grow(store, "acme", 4)
    hashes = await store.key_log_hashes("acme", 4)
    other = encode_add_checkpoint(0, [], KEYS.sign(Checkpoint(KEYS.origin("acme"), 4, root_hash(hashes))))
    assert (await witnesses.core("w1.test/a").add_checkpoint(other)).status == 200
    size = await grow(store, "acme", 3)

    await pusher(store, chosen).push("acme")

    assert await cosigned(store, "acme", chosen) == {"w1.test/a": size}


async def test_a_witness_beyond_the_log_is_not_asked_again_and_not_believed(
    store: MigratableStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The witness cosigned more of this log than the store holds (a store restored from an older
    backup, or a split view): nothing is saved, the others still cosign."""
    witnesses = Witnesses()
    chosen = [witnesses.in_process("w1.test/a"), witnesses.in_process("w2.test/b")]
    hashes = [_leaf("acme", index) for index in range(6)]
    ahead = encode_add_checkpoint(0, [], KEYS.sign(Checkpoint(KEYS.origin("acme"), 6, root_hash(hashes))))
    assert (await witnesses.core("w1.test/a").add_checkpoint(ahead)).status == 200
    size = await grow(store, "acme", 4)

    with caplog.at_level(logging.WARNING, "zkplatform.domain.witnessing"):
        await pusher(store, chosen).push("acme")

    assert await cosigned(store, "acme", chosen) == {"w2.test/b": size}
    assert "it holds size 6, beyond the log's" in caplog.text


async def answer_instead(scope: Scope, receive: Receive, send: Send, status: int, answer: bytes) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": answer})


def tampering(core: WitnessCore, change: Callable[[bytes], bytes]) -> Any:
    """A witness's app whose answers are changed on the way (a witness gone wrong)."""
    app = WitnessApp(core)

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        answered: dict[str, Any] = {}

        async def keep(message: MutableMapping[str, Any]) -> None:
            answered[message["type"]] = message

        await app(scope, receive, keep)
        changed = change(answered["http.response.body"]["body"])
        start = answered["http.response.start"]
        await send({**start, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": changed})

    return serve


def flip_signature(answer: bytes) -> bytes:
    (line,) = parse_cosignatures(answer)
    signature = NoteSignature.parse_line(line)
    flipped = bytearray(signature.signature)
    flipped[-1] ^= 1
    return NoteSignature(signature.name, signature.key_id, bytes(flipped)).line().encode()


async def test_cosignatures_that_do_not_verify_are_not_saved(
    store: MigratableStore, caplog: pytest.LogCaptureFixture
) -> None:
    witnesses = Witnesses()
    good = witnesses.in_process("w0.test/good")
    other_key = CosignatureVerifier.from_vkey(cosigner("w5.test/wrong-key").verifier().vkey())
    chosen = [
        good,
        witnesses.over_http("w1.test/flipped", tampering(witnesses.core("w1.test/flipped"), flip_signature)),
        witnesses.over_http("w2.test/garbage", tampering(witnesses.core("w2.test/garbage"), lambda _: b"hello\n")),
        witnesses.over_http("w3.test/empty", tampering(witnesses.core("w3.test/empty"), lambda _: b"")),
        witnesses.over_http("w6.test/long", tampering(witnesses.core("w6.test/long"), lambda line: line * 2000)),
        Witness(witnesses.in_process("w4.test/another").endpoint, other_key),  # answers, but not with the key known
    ]
    size = await grow(store, "acme", 3)

    with caplog.at_level(logging.WARNING, "zkplatform.domain.witnessing"):
        await pusher(store, chosen).push("acme")

    assert await cosigned(store, "acme", chosen) == {"w0.test/good": size}
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 5
    assert "the call failed (AnswerTooLarge)" in caplog.text
    assert all("\n" not in line and "PRIVATE" not in line for line in lines)


async def test_a_cosignature_from_the_future_is_not_saved(store: MigratableStore) -> None:
    witnesses = Witnesses()
    chosen = [witnesses.in_process("w1.test/a")]
    witnesses.clock.now += 3600  # the witness's clock runs an hour ahead of the server's
    await grow(store, "acme", 3)

    await pusher(store, chosen).push("acme")

    assert await store.witness_sizes("acme") == {}


@contextmanager
def unanswering() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers: a hung witness."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        yield f"http://127.0.0.1:{hung.getsockname()[1]}"


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_a_witness_that_is_down_or_hung_does_not_hold_up_the_others(
    store: MigratableStore, caplog: pytest.LogCaptureFixture
) -> None:
    witnesses = Witnesses()
    good = witnesses.in_process("w1.test/good")
    with unanswering() as hung_url:
        chosen = [
            Witness(HttpWitness(closed_port().replace("//", "//user:s3cret@")), cosigner("w2.test/down").verifier()),
            Witness(HttpWitness(hung_url), cosigner("w3.test/hung").verifier()),
            good,
        ]
        size = await grow(store, "acme", 2)
        started = time.monotonic()

        with caplog.at_level(logging.WARNING, "zkplatform.domain.witnessing"):
            await pusher(store, chosen, timeout=0.5).push("acme")

    assert time.monotonic() - started < 5
    assert await cosigned(store, "acme", chosen) == {"w1.test/good": size}
    assert "w2.test/down" in caplog.text
    assert "s3cret" not in caplog.text
    assert "the call failed (ConnectError)" in caplog.text
    assert "no answer within 0.5 s" in caplog.text


async def test_a_store_that_fails_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    await migrated(url)
    broken = await open_store(url)
    await broken.close()  # every call now fails
    witnesses = Witnesses()

    with caplog.at_level(logging.WARNING, "zkplatform.domain.witnessing"):
        await pusher(broken, [witnesses.in_process("w1.test/a")]).push("acme")

    assert "cannot push tenant acme's checkpoint" in caplog.text


async def eventually(condition: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> bool:
    """Whether the condition comes to hold within `seconds` (the pusher's loop says nothing)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await condition():
            return True
        await asyncio.sleep(0.01)
    return False


async def test_run_pushes_every_tenant_then_a_notified_one_at_once(store: MigratableStore) -> None:
    witnesses = Witnesses()
    chosen = [witnesses.in_process("w1.test/a")]
    push = pusher(store, chosen)
    await grow(store, "acme", 2)
    await grow(store, "globex", 3)
    running = asyncio.create_task(push.run(3600))
    try:
        assert await eventually(lambda: _sizes_are(store, {"acme": 2, "globex": 3}))

        await grow(store, "acme", 1)
        push.notify("acme")

        assert await eventually(lambda: _sizes_are(store, {"acme": 3, "globex": 3}))
    finally:
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running


async def test_run_pushes_again_at_its_interval(store: MigratableStore) -> None:
    witnesses = Witnesses()
    push = pusher(store, [witnesses.in_process("w1.test/a")])
    await grow(store, "acme", 2)
    running = asyncio.create_task(push.run(0.05))
    try:
        assert await eventually(lambda: _sizes_are(store, {"acme": 2}))
        witnesses.clock.now += 60

        async def refreshed() -> bool:
            _, cosignatures = await store.served_checkpoint("acme", ["w1.test/a"], 1)
            return bool(cosignatures) and cosignatures[0].cosigned_at == START + 60

        assert await eventually(refreshed)
    finally:
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running


async def _sizes_are(store: KeyLogRepository, sizes: dict[str, int]) -> bool:
    return {tenant_id: (await store.witness_sizes(tenant_id)).get("w1.test/a") for tenant_id in sizes} == sizes
