"""`python -m zkplatform_client.dpop_proof`, as docs/clients.md uses it: proofs the server accepts, and one line
and exit code 2 for a key file it will not overwrite or cannot use."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from zkplatform.domain.dpop import ProofRequest, verify_proof
from zkplatform.store.memory import MemoryStore
from zkplatform_client.dpop_proof import main, new_key

URL = "http://127.0.0.1:8080/platform.v1.VaultService/DeleteItem"
TOKEN = "zkp_" + "A" * 49


@pytest.mark.parametrize("kind", ["ec", "ed25519"])
async def test_key_and_proof_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    keyfile = tmp_path / "key.json"
    assert main(["new-key", str(keyfile), "--kind", kind]) == 0
    thumbprint = capsys.readouterr().out.strip()
    assert main(["proof", str(keyfile), URL, TOKEN]) == 0
    proof = capsys.readouterr().out.strip()

    assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600
    assert len(thumbprint) == 43
    await verify_proof(
        ProofRequest(proof=proof, htm="POST", htu=URL),
        key_thumbprint=thumbprint,
        access_token=TOKEN,
        now=int(time.time()),
        replay=MemoryStore(),
    )


async def test_a_proof_for_the_get_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keyfile = tmp_path / "key.json"
    assert main(["new-key", str(keyfile)]) == 0
    thumbprint = capsys.readouterr().out.strip()
    assert main(["proof", str(keyfile), URL, TOKEN, "--method", "GET"]) == 0
    proof = capsys.readouterr().out.strip()

    await verify_proof(
        ProofRequest(proof=proof, htm="GET", htu=URL),
        key_thumbprint=thumbprint,
        access_token=TOKEN,
        now=int(time.time()),
        replay=MemoryStore(),
    )


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command said on stderr, checked to be exactly one line."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("python -m zkplatform_client.dpop_proof: "), err
    return err


def test_new_key_keeps_an_existing_key_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keyfile = tmp_path / "key.json"
    assert main(["new-key", str(keyfile)]) == 0
    first, kept = capsys.readouterr().out.strip(), keyfile.read_text()

    assert main(["new-key", str(keyfile)]) == 2
    assert "exists" in error_line(capsys)
    assert keyfile.read_text() == kept

    assert main(["new-key", str(keyfile), "--force"]) == 0
    assert capsys.readouterr().out.strip() != first
    assert keyfile.read_text() != kept
    assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "No such file or directory; make a key with new-key"),
        ("not json", "is not a key written by new-key"),
        ('{"kty": "EC"}', "is not a key written by new-key"),
        ("public", "is not a key written by new-key"),
    ],
)
def test_proof_with_an_unusable_key_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, says: str
) -> None:
    keyfile = tmp_path / "key.json"
    if content == "public":  # a key that cannot sign
        content = json.dumps(new_key().as_dict(private=False))
    if content is not None:
        keyfile.write_text(content)

    assert main(["proof", str(keyfile), URL, TOKEN]) == 2

    assert says in error_line(capsys)
    assert capsys.readouterr().out == ""


def test_an_unreadable_key_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A directory where the key should be: unreadable whoever runs the test (root reads any mode).
    assert main(["proof", str(tmp_path), URL, TOKEN]) == 2

    assert "Is a directory" in error_line(capsys)


@pytest.mark.parametrize(
    "url", ["http://[::1/x", "http://[zz::1]/x", "https://host:65536/x", "https://host:1e3/x", "host/x"]
)
def test_a_url_of_no_host_and_port_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    keyfile = tmp_path / "key.json"
    assert main(["new-key", str(keyfile)]) == 0
    capsys.readouterr()

    assert main(["proof", str(keyfile), url, TOKEN]) == 2

    assert (
        error_line(capsys)
        .rstrip()
        .endswith(f"{url} is not an http(s) URL naming a host and an optional port from 1 to 65535")
    )
    assert capsys.readouterr().out == ""
