"""The private names of hypercorn, connectrpc and protobuf-py that our code touches are all
still there in the installed versions, and those versions are the ones the list was checked
against: an upgrade fails here first, naming what to look at (server/private_names.py)."""

from __future__ import annotations

import importlib
import inspect
import re
from importlib.metadata import version

import pytest

from zkplatform.server import hypercorn_fix
from zkplatform.server.private_names import CHECKED_VERSIONS, PRIVATE_NAMES, PrivateName


def _exists(entry: PrivateName) -> bool:
    """The name is an attribute, or an attribute the owning class's code sets on its instances."""
    owner: object = importlib.import_module(entry.module)
    *path, last = entry.name.split(".")
    for part in path:
        owner = getattr(owner, part)
    if hasattr(owner, last):
        return True
    set_on_instances = re.compile(rf"self\.{re.escape(last)}\s*[:=]")
    return inspect.isclass(owner) and set_on_instances.search(inspect.getsource(owner)) is not None


@pytest.mark.parametrize("entry", PRIVATE_NAMES, ids=lambda entry: f"{entry.module}.{entry.name}")
def test_each_private_name_is_still_there(entry: PrivateName) -> None:
    assert _exists(entry), f"{entry.module}.{entry.name} is gone: see {entry.by} ({entry.upstream})"


def test_the_installed_versions_are_the_ones_the_list_was_checked_against() -> None:
    installed = {name: version(name) for name in CHECKED_VERSIONS}
    assert installed == CHECKED_VERSIONS, "go through server/private_names.py, then update CHECKED_VERSIONS"
    assert CHECKED_VERSIONS["hypercorn"] == hypercorn_fix.FIXED_VERSION


def test_a_name_that_is_gone_is_found_out() -> None:
    assert not _exists(PrivateName("hypercorn.protocol.h2", "H2Protocol._no_such_method", "called", "", ""))
    assert not _exists(PrivateName("hypercorn.protocol.h2", "StreamBuffer._no_such_attribute", "read", "", ""))


def test_every_patched_hypercorn_method_is_listed() -> None:
    """What hypercorn_fix.apply() replaces is on the list (the list may hold more: what is called or read)."""
    listed = {(entry.module, entry.name) for entry in PRIVATE_NAMES}
    patched = {
        ("hypercorn.protocol.h2", "H2Protocol._handle_events"),
        ("hypercorn.protocol.h2", "H2Protocol.initiate"),
        ("hypercorn.protocol.h2", "H2Protocol._close_stream"),
        ("hypercorn.protocol.h2", "StreamBuffer.pop"),
        ("hypercorn.protocol.h11", "H11Protocol._maybe_recycle"),
        ("hypercorn.asyncio.tcp_server", "TCPServer._idle_timeout"),
        ("hypercorn.protocol", "ProtocolWrapper.handle"),
        ("hypercorn.asyncio.task_group", "TaskGroup.spawn_app"),
    }
    assert patched <= listed
