"""`zkplatform witness keygen` and `serve` as real processes: the protocol over a real hypercorn
on 127.0.0.1, and the operator's errors (one line, a documented exit code)."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import httpx
import pytest

from tests.witness.logs import TestLog, log_signer
from tests.witness.serving import WITNESS_NAME, keygen, serving, stop, witness
from zkplatform_tlog.merkle import consistency_proof
from zkplatform_tlog.note import CosignatureVerifier, Cosigner, generate_cosigner_key, generate_signer_key
from zkplatform_tlog.witness_wire import parse_cosignatures

pytestmark = pytest.mark.e2e


def post(url: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}/add-checkpoint", content=body, timeout=10)


def one_line(stderr: str) -> str:
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("zkplatform witness"), stderr
    return stderr


def test_keygen_writes_the_private_key_0600_and_prints_the_verifier_key(tmp_path: Path) -> None:
    done = witness("keygen", "--name", WITNESS_NAME, "--out", "w.key", cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    key = tmp_path / "w.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    skey = key.read_text()
    assert skey.startswith(f"PRIVATE+KEY+{WITNESS_NAME}+")
    assert skey not in done.stdout
    vkey = done.stdout.removesuffix("\n")
    assert "\n" not in vkey
    assert CosignatureVerifier.from_vkey(vkey) == Cosigner.from_skey(skey.strip()).verifier()


def test_keygen_never_replaces_a_key(tmp_path: Path) -> None:
    key, _ = keygen(tmp_path)
    before = key.read_text()

    done = witness("keygen", "--name", WITNESS_NAME, "--out", str(key), cwd=tmp_path)

    assert done.returncode == 1
    assert "exists" in one_line(done.stderr)
    assert (done.stdout, key.read_text()) == ("", before)


@pytest.mark.parametrize("name", ["two words", "a+b", ""])
def test_keygen_refuses_a_name_a_note_cannot_carry(tmp_path: Path, name: str) -> None:
    done = witness("keygen", "--name", name, "--out", "w.key", cwd=tmp_path)

    assert done.returncode == 2
    assert "--name" in one_line(done.stderr)
    assert not (tmp_path / "w.key").exists()


def test_keygen_into_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    done = witness("keygen", "--name", WITNESS_NAME, "--out", "nowhere/w.key", cwd=tmp_path)

    assert done.returncode == 2
    assert "cannot write nowhere/w.key" in one_line(done.stderr)


def test_the_protocol_over_http(tmp_path: Path) -> None:
    log = TestLog()
    key, vkey = keygen(tmp_path)
    verifier = CosignatureVerifier.from_vkey(vkey)
    with serving(tmp_path, key, tmp_path / "w.db", log.verifier.vkey()) as served:
        first = post(served.url, log.request(0, 5))
        assert first.status_code == 200
        (line,) = parse_cosignatures(first.content)
        verifier.verify_line(log.body(5), line)

        assert post(served.url, log.request(5, 9)).status_code == 200
        conflict = post(served.url, log.request(5, 12))
        assert (conflict.status_code, conflict.content) == (409, b"9\n")
        assert conflict.headers["content-type"] == "text/x.tlog.size"
        bad_proof = consistency_proof(log.hashes(12), 9)[1:]
        assert post(served.url, log.request(9, 12, proof=bad_proof)).status_code == 422
        fork = TestLog(log.tenant_id, log.signer, salt="fork ")
        assert post(served.url, fork.request(9, 9)).status_code == 422
        assert post(served.url, log.request(9, 5, proof=[])).status_code == 400
        assert post(served.url, TestLog(signer=log_signer("other.example.test")).request(0, 1)).status_code == 404
        assert post(served.url, log.request(9, 12, note=log.note(12, log_signer(log.signer.name)))).status_code == 403
        assert post(served.url, b"old 9\n\n" + log.body(12).encode()).status_code == 400  # unsigned
        assert post(served.url, b"\xff" * 17 * 1024).status_code == 413
        chunked = httpx.post(f"{served.url}/add-checkpoint", content=iter([b"\xff" * 10_000] * 2), timeout=10)
        assert chunked.status_code == 413  # no length declared: counted as it arrives

        assert httpx.get(f"{served.url}/add-checkpoint").status_code == 405
        healthz = httpx.get(f"{served.url}/healthz")
        assert (healthz.status_code, healthz.text) == (200, "ok\n")
        assert httpx.get(f"{served.url}/").status_code == 404
        assert post(served.url, log.request(9, 9)).status_code == 200  # the fork changed nothing
        assert stop(served) == 0

    output = served.log()
    assert "Traceback" not in output
    refusals = [line for line in output.splitlines() if "add-checkpoint refused" in line]
    statuses = [line.split("refused: ")[1][:3] for line in refusals]
    assert statuses == ["409", "422", "422", "400", "404", "403", "400", "413", "413"]
    assert f"origin={log.origin}" in refusals[0]
    assert log.note(5).splitlines()[-1].split()[-1] not in output  # no request's signature in the log
    assert output.rstrip().endswith("stopped")


def test_the_state_outlives_a_restart(tmp_path: Path) -> None:
    log = TestLog()
    key, _ = keygen(tmp_path)
    with serving(tmp_path, key, tmp_path / "w.db", log.verifier.vkey()) as served:
        assert post(served.url, log.request(0, 7)).status_code == 200

    with serving(tmp_path, key, tmp_path / "w.db", log.verifier.vkey()) as served:
        assert post(served.url, log.request(0, 9)).content == b"7\n"
        assert post(served.url, log.request(7, 9)).status_code == 200


def serve_refused(tmp_path: Path, *arguments: str) -> str:
    """`witness serve` that must not start: its one line on standard error (exit 2)."""
    done = witness("serve", *arguments, cwd=tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    return one_line(done.stderr)


def test_serve_refuses_a_key_it_cannot_use(tmp_path: Path) -> None:
    vkey = TestLog().verifier.vkey()
    flags = ["--state", "w.db", "--log-key", vkey, "--bind", "127.0.0.1:1"]
    assert "cannot read --key missing.key" in serve_refused(tmp_path, "--key", "missing.key", *flags)

    garbage = tmp_path / "garbage.key"
    garbage.write_text("PRIVATE+KEY+almost+0000+c2VjcmV0IHNlZWQ=\n")
    assert "c2VjcmV0" not in serve_refused(tmp_path, "--key", str(garbage), *flags)

    note_key = tmp_path / "note.key"  # a log's key where the witness's belongs
    note_key.write_text(generate_signer_key("keys.example.test")[0] + "\n")
    assert "is not a witness's private key" in serve_refused(tmp_path, "--key", str(note_key), *flags)


def test_serve_refuses_a_log_key_that_is_not_one(tmp_path: Path) -> None:
    key, vkey = keygen(tmp_path)
    flags = ["--key", str(key), "--state", "w.db", "--bind", "127.0.0.1:1"]

    assert "--log-key" in serve_refused(tmp_path, *flags, "--log-key", "nonsense")
    assert "wrong-key-type" in serve_refused(tmp_path, *flags, "--log-key", vkey)  # a witness's, not a log's
    assert "--log-key" in serve_refused(tmp_path, *flags)


def test_serve_refuses_a_state_it_cannot_use(tmp_path: Path) -> None:
    key, _ = keygen(tmp_path)
    not_sqlite = tmp_path / "state.txt"
    not_sqlite.write_text("x" * 4096)
    flags = ["--key", str(key), "--log-key", TestLog().verifier.vkey(), "--bind", "127.0.0.1:1"]

    assert str(tmp_path) in serve_refused(tmp_path, *flags, "--state", str(tmp_path))
    assert "state.txt" in serve_refused(tmp_path, *flags, "--state", str(not_sqlite))
    assert "missing/w.db" in serve_refused(tmp_path, *flags, "--state", "missing/w.db")


def test_serve_refuses_a_port_that_is_taken(tmp_path: Path) -> None:
    key, _ = keygen(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = serve_refused(
            tmp_path,
            "--key",
            str(key),
            "--state",
            "w.db",
            "--log-key",
            TestLog().verifier.vkey(),
            "--bind",
            f"127.0.0.1:{port}",
        )
    assert f"127.0.0.1:{port} is already in use" in line


def test_the_key_of_serve_is_keygens(tmp_path: Path) -> None:
    """A key made elsewhere (the same format) serves as well."""
    skey, vkey = generate_cosigner_key("witness.example.test/w2")
    (tmp_path / "w2.key").write_text(skey + "\n")
    log = TestLog()
    with serving(tmp_path, tmp_path / "w2.key", tmp_path / "w.db", log.verifier.vkey()) as served:
        (line,) = parse_cosignatures(post(served.url, log.request(0, 1)).content)
    CosignatureVerifier.from_vkey(vkey).verify_line(log.body(1), line)
    assert vkey in served.log()  # the listening line names the witness's key
