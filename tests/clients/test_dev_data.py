"""The development data set is really sealed: against `zkplatform serve --dev`, every item opens
with the demo key of each member of its vault and with no other, its wrapped keys are for keys
the verified key log has (those of the vault's members), and the README's walk-through opens
one of bob's shared items as it says."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import Server, serving
from zkplatform_api.platform.v1.vault_pb2 import ListItemsRequest
from zkplatform_client import KeyDirectory, RecipientPrivateKey, SealingError, clients, open_item

pytestmark = pytest.mark.e2e  # starts servers (tests/conftest.py marks only tests/e2e by place)

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = {"acme-private": ["alice"], "acme-shared": ["alice", "bob"], "globex-main": ["carol"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("dev"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def credentials_file(server: Server) -> Path:
    return server.log_path.parent / "var" / "dev-credentials.json"


@pytest.fixture(scope="module")
def principals(credentials_file: Path) -> dict[str, dict[str, Any]]:
    credentials = json.loads(credentials_file.read_text())
    return {p["principalId"]: {**p, "tenantId": t["tenantId"]} for t in credentials["tenants"] for p in t["principals"]}


async def test_every_item_opens_for_its_vaults_members_only(server: Server, principals: dict[str, Any]) -> None:
    keys = {name: RecipientPrivateKey.from_jwk(p["privateKeyJwk"]) for name, p in principals.items()}
    opened: dict[str, list[str]] = {}
    refused: dict[str, set[str]] = {}
    for vault_id, members in MEMBERS.items():
        async with clients(server.base_url, token=principals[members[0]]["token"]) as platform:
            items = (await platform.vault.list_items(ListItemsRequest(vault_id=vault_id))).items
            directory = KeyDirectory(platform.directory)
            await directory.verify()
            logged = (await directory.state()).keys
        for item in items:
            for name, key in keys.items():
                try:
                    content = json.loads(open_item(item, key))
                except SealingError as error:
                    refused.setdefault(f"{vault_id}/{name}", set()).add(error.reason)
                else:
                    assert content["title"]
                    opened.setdefault(vault_id, []).append(name)
            recipients = {k.recipient_id for k in item.wrapped_keys}
            sealed_for = {logged[key_id].principal_id for key_id in logged if _hex(key_id) in recipients}
            assert sealed_for == set(members)
            assert len(item.wrapped_keys) == len(members)

    assert {vault: sorted(set(names)) for vault, names in opened.items()} == MEMBERS
    assert {vault: len(names) for vault, names in opened.items()} == {v: 6 * len(m) for v, m in MEMBERS.items()}
    assert refused == {
        "acme-private/bob": {"NOT_A_RECIPIENT"},
        "acme-private/carol": {"NOT_A_RECIPIENT"},
        "acme-shared/carol": {"NOT_A_RECIPIENT"},
        "globex-main/alice": {"NOT_A_RECIPIENT"},
        "globex-main/bob": {"NOT_A_RECIPIENT"},
    }


def test_the_credentials_name_the_published_keys(principals: dict[str, Any]) -> None:
    for principal in principals.values():
        key = RecipientPrivateKey.from_jwk(principal["privateKeyJwk"])
        assert key.key_id == principal["keyId"]


def test_the_readme_walk_through_opens_bobs_shared_item(credentials_file: Path, server: Server) -> None:
    block = re.search(r"<!-- the sealed demo -->\s*```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert block, "README.md has no shell block after <!-- the sealed demo -->"
    command = block.group(1).replace("var/dev-credentials.json", str(credentials_file))
    command = command.replace(".venv/bin/python", sys.executable)
    shown = re.search(r"<!-- the sealed demo -->.*?```json\n(.*?)\n```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert shown

    result = subprocess.run(  # the README's own command
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False, env=os.environ
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(shown.group(1))
    assert "privateKeyJwk" not in result.stdout
    assert '"d"' not in server.log()


def _hex(key_id: str) -> str:
    """A key id (base64url) as a wrapped key's recipient_id names it (hex)."""
    return base64.urlsafe_b64decode(key_id + "=").hex()
