"""CPU time per call of the app and of the no-op Connect handler, in one process, side by side.

    python -m bench.inprocess [--calls 2000] [--batches 15] [--only "delete proto"] [--profile FILE]

No server and no network: each call is handed to the ASGI application directly, in a task
of its own as hypercorn does, so the figures are our layers' and connectrpc's alone (the
server's share, paid equally by both, is what makes the `make bench` ratios higher than
these). Batches of the two apps alternate; each figure is the minimum over its batches,
which on a shared machine is the one least disturbed. `--profile` writes cProfile's
statistics of the app's calls instead (read them with `python -m pstats FILE`).
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

from bench.apps import noop_app, platform_app
from bench.seed import MINT_POLICY_ENV, Tokens
from zkplatform.asgi import ASGIApp, Message, Scope
from zkplatform.cli import configure_logging
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

CALLS = ("delete json", "delete proto", "mint json", "mint proto")
_VAULT_SIZE = 1000
_HTTP_OK = 200

Request = tuple[str, str, bytes, str]  # path, content type, body, token


def _requests(call: str, tokens: Tokens, first_item: int, vaults: int) -> Iterator[Request]:
    rpc, codec = call.split()
    content_type = f"application/{codec}"
    if rpc == "delete":
        for n in itertools.count(first_item):
            message = vault_pb2.DeleteItemRequest(vault_id=f"v-{n % vaults}", item_id=f"b-{n}", base_version=1)
            yield "/platform.v1.VaultService/DeleteItem", content_type, _encode(message, codec), tokens.delete
    else:
        mint = broker_pb2.MintUserApiTokenRequest(
            tenant_id="bench", requested_scopes=["vault.items.delete"], requested_ttl_seconds=300
        )
        body = _encode(mint, codec)
        for token in itertools.cycle(tokens.mint):
            yield "/platform.v1.BrokerService/MintUserApiToken", content_type, body, token


def _encode(message: vault_pb2.DeleteItemRequest | broker_pb2.MintUserApiTokenRequest, codec: str) -> bytes:
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
    sent: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    status: list[int] = []

    async def receive() -> Message:
        if sent:
            return sent.pop()
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
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

    async def receive() -> Message:
        if not queue:
            await asyncio.Event().wait()  # until shutdown, which never comes: the driver exits
        return queue.pop()

    async def send(message: Message) -> None:
        if message["type"].endswith("complete"):
            raise asyncio.CancelledError

    with contextlib.suppress(asyncio.CancelledError):
        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)


async def _measure(args: argparse.Namespace, tokens: Tokens, apps: dict[str, ASGIApp], vaults: int) -> None:
    first_item = 0
    for call in args.only or CALLS:
        streams = {name: _requests(call, tokens, first_item, vaults) for name in apps}  # the no-op reads no item
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
        print(f"{call:13}  no-op {noop:6.1f} us  app {ours:6.1f} us  app/no-op throughput {noop / ours:.2f}x")
        first_item += args.calls * (args.batches + 1) + 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--batches", type=int, default=15, help="batches per app and call")
    parser.add_argument("--only", action="append", choices=CALLS, help="one of the calls (repeatable)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the app's calls of the first call into FILE")
    parser.add_argument("--access-log", action="store_true", help="write access lines (to nowhere), as `serve` does")
    args = parser.parse_args()
    items = len(args.only or CALLS) * (args.calls * (args.batches + 1) + 200)
    devnull = open(os.devnull, "w")  # noqa: PTH123, SIM115 # open until logging's last flush at exit
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.update(MINT_POLICY_ENV)
        os.environ.update(BENCH_TOKEN_FILE=str(Path(scratch, "tokens")), BENCH_ITEMS=str(items))
        os.environ["BENCH_VAULT_SIZE"] = str(_VAULT_SIZE)
        if args.access_log:  # as `serve` does; hypercorn serving bench.apps, as `make bench` does, writes none
            configure_logging()
            logging.getLogger().handlers[0].setStream(devnull)  # type: ignore[attr-defined]
        apps: dict[str, ASGIApp] = {"noop": noop_app(), "app": platform_app()}
        tokens = Tokens.read(Path(os.environ["BENCH_TOKEN_FILE"]))

        async def run() -> None:
            for app in apps.values():
                await _lifespan(app)
            await _measure(args, tokens, apps, -(-items // _VAULT_SIZE))

        asyncio.run(run())


if __name__ == "__main__":
    main()
