"""CPU time per call of the app and of the no-op Connect handler, in one process, side by side.

    python -m bench.inprocess [--calls 2000] [--batches 15] [--only "delete proto"] [--checks] [--profile FILE]

Without --only: DeleteItem and MintUserApiToken in both codecs. --only also takes the other
RPCs the way `make bench` calls them ("create json", "list-tokens proto", ...: OTHER_RPCS).

No server and no network: each call is handed to the ASGI application directly, in a task
of its own as hypercorn does, so the figures are our layers' and connectrpc's alone (the
server's share, paid equally by both, is what makes the `make bench` ratios higher than
these). Batches of the two apps alternate; each figure is the minimum over its batches,
which on a shared machine is the one least disturbed. `--profile` writes cProfile's
statistics of the app's calls instead (read them with `python -m pstats FILE`). `--checks` adds
the app's layers and checks in front of the no-op handler's fixed answers (bench/noop.py), the
third setup of `make bench`'s per-call group.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import itertools
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.message import Message

from bench.apps import platform_app
from bench.noop import noop_app
from bench.seed import MINT_POLICY_ENV, Tokens
from zkplatform.asgi import ASGIApp, Scope
from zkplatform.asgi import Message as ASGIMessage
from zkplatform.server.log_setup import configure_logging
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

CALLS = ("delete json", "delete proto", "mint json", "mint proto")
# The other RPCs, each in both codecs: --only "get json", say.
OTHER_RPCS = ("create", "update", "get", "list-first", "changes-first", "list-tokens", "revoke")
EVERY_CALL = (*CALLS, *(f"{rpc} {codec}" for rpc in OTHER_RPCS for codec in ("json", "proto")))
_VAULT_SIZE = 1000
_HTTP_OK = 200

Request = tuple[str, str, bytes, str]  # path, content type, body, token


_VAULT = "/platform.v1.VaultService/"
_BROKER = "/platform.v1.BrokerService/"


def _content(message: vault_pb2.CreateItemRequest | vault_pb2.UpdateItemRequest) -> None:
    """The content bench/calls.lua writes: a small payload wrapped for the owner."""
    payload = message.encrypted_payload
    payload.alg, payload.nonce, payload.aad, payload.version = "A256GCM", "bm9uY2Vub25jZQ", "YWFk", 1
    payload.ciphertext = "Y3JlYXRlZC1jcmVhdGVkLWNyZWF0ZWQ"
    message.kind, message.title_hash = "note", "dGl0bGUtaGFzaA"
    message.wrapped_keys.add(recipient_id="owner", wrap_alg="A256KW", wrapped_key="a2V5LWtleS1rZXkta2V5LWtleS1rZXk")


_SAME_EVERY_CALL: dict[str, tuple[str, Message]] = {
    "mint": (
        _BROKER + "MintUserApiToken",
        broker_pb2.MintUserApiTokenRequest(
            tenant_id="bench", requested_scopes=["vault.items.delete"], requested_ttl_seconds=300
        ),
    ),
    "list-tokens": (_BROKER + "ListTokens", broker_pb2.ListTokensRequest()),
    "list-first": (_VAULT + "ListItems", vault_pb2.ListItemsRequest(vault_id="v-0")),
    "changes-first": (_VAULT + "ListChanges", vault_pb2.ListChangesRequest(vault_id="v-0")),
}


def _messages(rpc: str, tokens: Tokens, first_item: int, vaults: int) -> Iterator[tuple[str, Message, str]]:
    """(path, request, token) of each call, as bench/calls.lua makes them: mints spread over the
    minters' tokens; deletes and updates each change a fresh seeded item, creates make a new one,
    revokes revoke one of the owner's tokens; the owner reads."""
    owner = tokens.delete
    if rpc == "mint":
        path, mint = _SAME_EVERY_CALL[rpc]
        yield from ((path, mint, token) for token in itertools.cycle(tokens.mint))
    elif rpc in _SAME_EVERY_CALL:
        yield from itertools.repeat((*_SAME_EVERY_CALL[rpc], owner))
    elif rpc == "revoke":
        for token_id in tokens.own[first_item:]:
            yield _BROKER + "RevokeToken", broker_pb2.RevokeTokenRequest(token_id=token_id), owner
    else:
        for n in itertools.count(first_item):
            yield (*_item_call(rpc, f"v-{n % vaults}", n), owner)


def _item_call(rpc: str, vault_id: str, n: int) -> tuple[str, Message]:
    item_id = f"b-{n}"
    if rpc == "delete":
        return _VAULT + "DeleteItem", vault_pb2.DeleteItemRequest(vault_id=vault_id, item_id=item_id, base_version=1)
    if rpc == "get":
        return _VAULT + "GetItem", vault_pb2.GetItemRequest(vault_id=vault_id, item_id=item_id)
    if rpc == "update":
        update = vault_pb2.UpdateItemRequest(vault_id=vault_id, item_id=item_id, base_version=1)
        _content(update)
        return _VAULT + "UpdateItem", update
    create = vault_pb2.CreateItemRequest(vault_id=vault_id, item_id=f"c-{n}")
    _content(create)
    return _VAULT + "CreateItem", create


def _requests(call: str, tokens: Tokens, first_item: int, vaults: int) -> Iterator[Request]:
    rpc, codec = call.split()
    content_type = f"application/{codec}"
    for path, message, token in _messages(rpc, tokens, first_item, vaults):
        yield path, content_type, _encode(message, codec), token


def _encode(message: Message, codec: str) -> bytes:
    if codec == "proto":
        return message.SerializeToString()
    from google.protobuf import json_format  # noqa: PLC0415

    return json_format.MessageToJson(message, indent=None).encode()


async def _call(app: ASGIApp, request: Request) -> None:
    path, content_type, body, token = request
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8080"),
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connect-protocol-version", b"1"),
            (b"authorization", b"Bearer " + token.encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
        "extensions": {},
    }
    answered = asyncio.Event()
    sent: list[ASGIMessage] = [{"type": "http.request", "body": body, "more_body": False}]
    status: list[int] = []

    async def receive() -> ASGIMessage:
        if sent:
            return sent.pop()
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: ASGIMessage) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif not message.get("more_body", False):
            answered.set()

    await app(scope, receive, send)
    answered.set()
    if status != [_HTTP_OK]:
        msg = f"{path} answered {status}"
        raise RuntimeError(msg)


async def _batch(app: ASGIApp, requests: Iterator[Request], calls: int) -> float:
    """CPU microseconds per call over `calls` calls, each in a task of its own."""
    started = time.process_time()
    for _ in range(calls):
        await asyncio.create_task(_call(app, next(requests)))
    return (time.process_time() - started) / calls * 1e6


async def _lifespan(app: ASGIApp) -> None:
    queue = [{"type": "lifespan.startup"}]

    async def receive() -> ASGIMessage:
        if not queue:
            await asyncio.Event().wait()  # until shutdown, which never comes: the driver exits
        return queue.pop()

    async def send(message: ASGIMessage) -> None:
        if message["type"].endswith("complete"):
            raise asyncio.CancelledError

    with contextlib.suppress(asyncio.CancelledError):
        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)


async def _measure(args: argparse.Namespace, tokens: dict[str, Tokens], apps: dict[str, ASGIApp], vaults: int) -> None:
    first_item = 0
    for call in args.only or CALLS:
        # Each app its own store's tokens; the no-op handler reads none.
        streams = {name: _requests(call, tokens.get(name, tokens["app"]), first_item, vaults) for name in apps}
        figures: dict[str, list[float]] = {name: [] for name in apps}
        for name, app in apps.items():  # warm up: codecs, caches, the first task of each kind
            await _batch(app, streams[name], 200)
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(lambda: None)
            profile.enable()
            await _batch(apps["app"], streams["app"], args.calls * args.batches)
            profile.disable()
            profile.dump_stats(args.profile)
            print(f"{call}: profile of {args.calls * args.batches} calls written to {args.profile}")
            return
        for _ in range(args.batches):
            for name, app in apps.items():
                figures[name].append(await _batch(app, streams[name], args.calls))
        noop, ours = min(figures["noop"]), min(figures["app"])
        line = f"{call:13}  no-op {noop:6.1f} us  app {ours:6.1f} us  app/no-op throughput {noop / ours:.2f}x"
        if "checks" in figures:
            checks = min(figures["checks"])
            line += f"  checks {checks:6.1f} us  checks/no-op {noop / checks:.2f}x"
        print(line)
        first_item += args.calls * (args.batches + 1) + 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--batches", type=int, default=15, help="batches per app and call")
    parser.add_argument("--only", action="append", choices=EVERY_CALL, help="one of the calls (repeatable)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the app's calls of the first call into FILE")
    parser.add_argument("--access-log", action="store_true", help="write access lines (to nowhere), as `serve` does")
    parser.add_argument("--checks", action="store_true", help="also the layers and checks with fixed answers")
    args = parser.parse_args()
    items = len(args.only or CALLS) * (args.calls * (args.batches + 1) + 200)
    devnull = open(os.devnull, "w")  # noqa: PTH123, SIM115 # open until logging's last flush at exit
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.update(MINT_POLICY_ENV)
        os.environ.update(BENCH_TOKEN_FILE=str(Path(scratch, "tokens")), BENCH_ITEMS=str(items))
        os.environ["BENCH_VAULT_SIZE"] = str(_VAULT_SIZE)
        if {"revoke", "list-tokens"} & {call.split()[0] for call in args.only or ()}:
            os.environ["BENCH_OWN_TOKENS"] = str(items)  # a fresh one for every revoke
        if args.access_log:  # as `serve` does; hypercorn serving bench.apps, as `make bench` does, writes none
            configure_logging()
            logging.getLogger().handlers[0].setStream(devnull)  # type: ignore[attr-defined]
        apps: dict[str, ASGIApp] = {"noop": noop_app()}
        tokens: dict[str, Tokens] = {}
        setups = {"app": True, "checks": False} if args.checks else {"app": True}  # name: with servicers
        for name, servicers in setups.items():
            apps[name] = platform_app(servicers=servicers)  # seeds a store of its own, and writes its tokens
            tokens[name] = Tokens.read(Path(os.environ["BENCH_TOKEN_FILE"]))

        async def run() -> None:
            for app in apps.values():
                await _lifespan(app)
            await _measure(args, tokens, apps, -(-items // _VAULT_SIZE))

        asyncio.run(run())


if __name__ == "__main__":
    main()
