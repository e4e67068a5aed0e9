"""The witness's add-checkpoint decisions (C2SP tlog-witness), over the memory and the SQLite state."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.witness.conftest import START, Clock, cosigner
from tests.witness.logs import TestLog, log_signer
from zkplatform.witness.core import Answer, WitnessCore
from zkplatform.witness.state import Held, SqliteState, WitnessState
from zkplatform_tlog.checkpoint import Checkpoint
from zkplatform_tlog.merkle import EMPTY_ROOT, consistency_proof, root_hash
from zkplatform_tlog.note import NoteSignature, sign_note
from zkplatform_tlog.witness_wire import encode_add_checkpoint, parse_cosignatures


def cosigned_at(core: WitnessCore, log: TestLog, size: int, answer: Answer) -> int:
    """The time of the answer's one cosignature, which must verify for the checkpoint of `size`."""
    assert answer.status == 200, answer
    (line,) = parse_cosignatures(answer.body)
    return core.verifier.verify_line(log.body(size), line)


async def test_cosigns_a_first_checkpoint_from_old_size_zero(
    core: WitnessCore, log: TestLog, state: WitnessState
) -> None:
    answer = await core.add_checkpoint(log.request(0, 5))

    assert cosigned_at(core, log, 5, answer) == START
    assert await state.held(log.origin) == Held(5, root_hash(log.hashes(5)))


async def test_cosigns_a_consistent_extension(core: WitnessCore, log: TestLog, state: WitnessState) -> None:
    await core.add_checkpoint(log.request(0, 5))

    answer = await core.add_checkpoint(log.request(5, 13))

    assert cosigned_at(core, log, 13, answer) == START
    assert await state.held(log.origin) == Held(13, root_hash(log.hashes(13)))


async def test_the_same_checkpoint_again_is_cosigned_at_the_current_time(
    core: WitnessCore, log: TestLog, clock: Clock
) -> None:
    await core.add_checkpoint(log.request(0, 5))
    clock.now += 600

    assert cosigned_at(core, log, 5, await core.add_checkpoint(log.request(5, 5))) == START + 600


async def test_a_checkpoint_of_size_zero_with_the_empty_root(core: WitnessCore, log: TestLog) -> None:
    assert cosigned_at(core, log, 0, await core.add_checkpoint(log.request(0, 0))) == START


async def test_each_origin_is_held_apart(core: WitnessCore, log: TestLog, state: WitnessState) -> None:
    other = TestLog(tenant_id="globex", signer=log.signer)
    await core.add_checkpoint(log.request(0, 5))

    assert (await core.add_checkpoint(other.request(0, 2))).status == 200
    assert await state.held(log.origin) == Held(5, root_hash(log.hashes(5)))
    assert await state.held(other.origin) == Held(2, root_hash(other.hashes(2)))


async def refused(core: WitnessCore, body: bytes, status: int) -> Answer:
    answer = await core.add_checkpoint(body)
    assert answer.status == status, answer
    assert answer.refusal
    return answer


async def test_a_fork_of_the_held_size_is_refused_and_the_held_checkpoint_kept(
    core: WitnessCore, log: TestLog, state: WitnessState
) -> None:
    await core.add_checkpoint(log.request(0, 5))
    fork = TestLog(log.tenant_id, log.signer, salt="fork ")

    await refused(core, fork.request(5, 5), 422)
    await refused(core, fork.request(5, 8, proof=consistency_proof(log.hashes(8), 5)), 422)

    assert await state.held(log.origin) == Held(5, root_hash(log.hashes(5)))
    assert (await core.add_checkpoint(log.request(5, 8))).status == 200


async def test_a_proof_that_does_not_verify_is_refused(core: WitnessCore, log: TestLog, state: WitnessState) -> None:
    await core.add_checkpoint(log.request(0, 5))
    proof = consistency_proof(log.hashes(13), 5)

    await refused(core, log.request(5, 13, proof=[proof[0], bytes(32), *proof[2:]]), 422)
    await refused(core, log.request(5, 13, proof=proof[:-1]), 422)
    await refused(core, log.request(5, 13, proof=[*proof, bytes(32)]), 422)

    assert await state.held(log.origin) == Held(5, root_hash(log.hashes(5)))


async def test_a_proof_from_old_size_zero_must_be_empty(core: WitnessCore, log: TestLog) -> None:
    await refused(core, log.request(0, 5, proof=[root_hash(log.hashes(1))]), 422)


async def test_a_checkpoint_of_size_zero_needs_the_empty_root(core: WitnessCore, log: TestLog) -> None:
    body = Checkpoint(log.origin, 0, root_hash(log.hashes(1))).body()

    await refused(core, encode_add_checkpoint(0, [], sign_note(body, [log.signer])), 422)


async def test_a_smaller_checkpoint_is_refused(core: WitnessCore, log: TestLog, state: WitnessState) -> None:
    await core.add_checkpoint(log.request(0, 8))

    # From the held size: the old size is above the checkpoint's (400).
    await refused(core, log.request(8, 5, proof=[]), 400)
    # From its own size: not the held size (409, answering it).
    conflict = await refused(core, log.request(5, 5), 409)

    assert (conflict.body, conflict.content_type) == (b"8\n", "text/x.tlog.size")
    assert await state.held(log.origin) == Held(8, root_hash(log.hashes(8)))


async def test_an_old_size_that_is_not_the_held_one_answers_the_held_size(
    core: WitnessCore, log: TestLog, state: WitnessState
) -> None:
    conflict = await refused(core, log.request(3, 5), 409)
    assert (conflict.body, conflict.content_type) == (b"0\n", "text/x.tlog.size")

    await core.add_checkpoint(log.request(0, 5))
    for old in (0, 3, 7):
        conflict = await refused(core, log.request(old, 9), 409)
        assert conflict.body == b"5\n"
    assert await state.held(log.origin) == Held(5, root_hash(log.hashes(5)))


async def test_an_unknown_origin_is_404(core: WitnessCore, log: TestLog) -> None:
    other_log = TestLog(signer=log_signer("other.example.test"))
    # Signed by the known key, but not a key log's origin of its name.
    for origin in (
        f"{log.signer.name}/acme/key-log/v2",
        f"{log.signer.name}/acme/other-log/v1",
        f"{log.signer.name}/-acme/key-log/v1",
        f"{log.signer.name}//key-log/v1",
        "acme/key-log/v1",
        f"x{log.signer.name}/acme/key-log/v1",
    ):
        body = log.body(1).replace(log.origin, origin)
        await refused(core, encode_add_checkpoint(0, [], sign_note(body, [log.signer])), 404)
    await refused(core, other_log.request(0, 1), 404)


async def test_a_checkpoint_without_a_known_log_keys_signature_is_403(
    core: WitnessCore, log: TestLog, state: WitnessState
) -> None:
    impostor = log_signer(log.signer.name)  # the log's name, another key
    other_name = log_signer("other.example.test")

    await refused(core, log.request(0, 5, note=log.note(5, impostor)), 403)
    await refused(core, log.request(0, 5, note=log.note(5, other_name)), 403)
    assert await state.held(log.origin) == Held(0, EMPTY_ROOT)


async def test_a_known_key_whose_signature_fails_is_403_whatever_else_signed(
    log: TestLog, state: WitnessState, clock: Clock
) -> None:
    second = log_signer(log.signer.name)  # a rotation: two known keys of the log's name
    core = WitnessCore(cosigner(), [log.verifier, second.verifier()], state, clock)
    tampered = log.note(5).replace(log.body(5), log.body(6))  # the log key's line over another text

    await refused(core, log.request(0, 6, note=tampered), 403)
    # A good signature by one known key does not excuse a bad one by another.
    bad_line = NoteSignature(second.name, second.key_id, bytes(64)).line()
    await refused(core, log.request(0, 5, note=log.note(5) + bad_line), 403)
    assert await state.held(log.origin) == Held(0, EMPTY_ROOT)


async def test_signatures_of_unknown_keys_are_ignored(core: WitnessCore, log: TestLog) -> None:
    other = log_signer("another.example.test")
    cosigned_at(core, log, 5, await core.add_checkpoint(log.request(0, 5, note=log.note(5, other, log.signer))))


async def test_a_log_key_signs_only_the_origins_of_its_name(log: TestLog, state: WitnessState, clock: Clock) -> None:
    other = TestLog(signer=log_signer("other.example.test"))
    core = WitnessCore(cosigner(), [log.verifier, other.verifier], state, clock)

    # other's key signing log's origin: a known key, but not for this origin.
    await refused(core, log.request(0, 5, note=log.note(5, other.signer)), 403)
    assert (await core.add_checkpoint(other.request(0, 5))).status == 200
    assert (await core.add_checkpoint(log.request(0, 5))).status == 200


async def test_during_a_rotation_either_log_key_is_accepted(log: TestLog, state: WitnessState, clock: Clock) -> None:
    new_key = log_signer(log.signer.name)
    core = WitnessCore(cosigner(), [log.verifier, new_key.verifier()], state, clock)

    assert (await core.add_checkpoint(log.request(0, 5, note=log.note(5, new_key)))).status == 200
    assert (await core.add_checkpoint(log.request(5, 7, note=log.note(7, log.signer, new_key)))).status == 200


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\n",
        b"old 0\n",
        b"old 0\n\n",
        b"old -1\n\nx\n",
        b"old 01\n\nx\n",
        b"new 0\n\nx\n",
        b"old 0\nnot base64!\n\nx\n",
        b"old 0\nAAAA\n\nx\n",  # a proof line that is not 32 bytes
        b"old 0\n" + b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n" * 64 + b"\nx\n",
        b"old 0\n\n\xff\xfe\n",
        b"old 99999999999999999999999\n\nx\n",
    ],
    ids=lambda body: repr(body[:24]),
)
async def test_a_malformed_request_is_400(core: WitnessCore, body: bytes) -> None:
    await refused(core, body, 400)


async def test_a_malformed_note_is_400_or_403_never_500(core: WitnessCore, log: TestLog) -> None:
    note = log.note(5)
    await refused(core, encode_add_checkpoint(0, [], log.body(5) + "\n"), 400)  # no signature lines
    await refused(core, encode_add_checkpoint(0, [], log.body(5)), 400)  # no blank line at all
    await refused(core, encode_add_checkpoint(0, [], note.replace("\u2014", "-")), 400)
    await refused(core, encode_add_checkpoint(0, [], note + note.splitlines(keepends=True)[-1]), 403)  # twice


async def test_a_signed_note_that_is_no_checkpoint_is_400(core: WitnessCore, log: TestLog) -> None:
    for text in (f"{log.origin}\n", f"{log.origin}\n05\nAAAA\n", f"{log.origin}\n5\nnot a hash\n"):
        await refused(core, encode_add_checkpoint(0, [], sign_note(text, [log.signer])), 400)


async def test_an_old_size_above_the_checkpoints_is_400(core: WitnessCore, log: TestLog) -> None:
    await refused(core, log.request(6, 5, proof=[]), 400)


async def test_concurrent_requests_from_one_held_size_cosign_one_extension(
    tmp_path: Path, log: TestLog, clock: Clock
) -> None:
    """Two SQLite states on one file (two witness processes, say), each request in a thread:
    only one extension from size 2 is cosigned, the others are told the new size."""
    first, second = SqliteState.open(tmp_path / "w.db"), SqliteState.open(tmp_path / "w.db")
    key = cosigner()
    cores = [WitnessCore(key, [log.verifier], state, clock) for state in (first, second)]
    await cores[0].add_checkpoint(log.request(0, 2))

    answers = await asyncio.gather(*(cores[size % 2].add_checkpoint(log.request(2, size)) for size in range(3, 19)))

    assert sorted(answer.status for answer in answers) == [200] + [409] * 15
    (winner,) = (size for size, answer in zip(range(3, 19), answers, strict=True) if answer.status == 200)
    assert {answer.body for answer in answers if answer.status == 409} == {f"{winner}\n".encode()}
    assert await first.held(log.origin) == Held(winner, root_hash(log.hashes(winner)))


async def test_the_sqlite_state_outlives_its_process(tmp_path: Path, log: TestLog, clock: Clock) -> None:
    key = cosigner()
    await WitnessCore(key, [log.verifier], SqliteState.open(tmp_path / "w.db"), clock).add_checkpoint(log.request(0, 7))

    reopened = WitnessCore(key, [log.verifier], SqliteState.open(tmp_path / "w.db"), clock)

    assert (await reopened.add_checkpoint(log.request(0, 9))).body == b"7\n"
    assert (await reopened.add_checkpoint(log.request(7, 9))).status == 200
