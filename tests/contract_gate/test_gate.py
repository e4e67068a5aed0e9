"""The contract gate, as `make breaking` runs it, on edited copies of proto/ against the committed baseline.

Each test copies proto/ (with buf.yaml and third_party/, which it builds with) to a temporary
directory, edits one message, and runs both halves of the gate: `buf breaking` against the
baseline image, and scripts/check_rules.py on the image that `buf build` makes of the copy.
The edits go far past any value the protos hold (a max_len of 1, a bound of a million), so that
they stay stricter or looser than the baseline as the contract grows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts import check_rules
from scripts.protoimage import Image

pytestmark = pytest.mark.e2e  # runs buf

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "baseline" / "platform-v1.json"
BUF = str(Path(sys.executable).parent / "buf")
VAULT = "zkplatform_api/platform/v1/vault.proto"


@dataclass
class Outcome:
    breaking: subprocess.CompletedProcess[str]  # buf breaking proto --against BASELINE
    violations: list[str]  # check_rules' report, one line each

    @property
    def passed(self) -> bool:
        return self.breaking.returncode == 0 and not self.violations


class Protos:
    """A copy of the protos to edit, and the gate run on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.copy(REPO / "buf.yaml", root)
        for tree in ("proto", "third_party"):
            shutil.copytree(REPO / tree, root / tree)

    def edit(self, message: str, old: str, new: str, file: str = VAULT) -> Protos:
        """Replaces `old`, which must occur once in `message <message> { ... }` of `file`, by `new`."""
        path = self.root / "proto" / file
        text = path.read_text()
        block = re.search(rf"^message {message} \{{\n.*?^\}}\n", text, re.MULTILINE | re.DOTALL)
        assert block is not None, f"no message {message} in {file}"
        assert block[0].count(old) == 1, f"{old!r} is not in {message} exactly once: update this test"
        path.write_text(text[: block.start()] + block[0].replace(old, new) + text[block.end() :])
        return self

    def add(self, message: str, declaration: str, file: str = VAULT) -> Protos:
        """Adds a declaration (a field, an option) at the end of `message`."""
        return self.edit(message, "\n}\n", f"\n\n  {declaration}\n}}\n", file)

    def gate(self, baseline: Image) -> Outcome:
        """The two commands of `make breaking`, the second in process."""
        breaking = subprocess.run(
            [BUF, "breaking", "proto", "--against", str(BASELINE)],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
        )
        image = self.root / "current.binpb"
        subprocess.run([BUF, "build", "proto", "--exclude-source-info", "-o", str(image)], cwd=self.root, check=True)
        return Outcome(breaking, [str(violation) for violation in check_rules.check(baseline, Image.load(image))])


@pytest.fixture(scope="module")
def baseline() -> Image:
    return Image.load(BASELINE)


@pytest.fixture
def protos(tmp_path: Path) -> Protos:
    return Protos(tmp_path)


def assert_reported(outcome: Outcome, start: str, end: str) -> None:
    assert any(line.startswith(start) and line.endswith(end) for line in outcome.violations), outcome.violations


def test_the_protos_as_they_are_pass(protos: Protos, baseline: Image) -> None:
    outcome = protos.gate(baseline)
    assert outcome.passed, (outcome.breaking.stdout, outcome.violations)


def test_a_tightened_request_rule_fails_though_buf_breaking_passes(protos: Protos, baseline: Image) -> None:
    outcome = protos.edit("ListItemsRequest", "max_len: 1024", "max_len: 1").gate(baseline)
    assert outcome.breaking.returncode == 0, outcome.breaking.stdout  # buf sees no rules
    assert_reported(
        outcome,
        f"{VAULT}: platform.v1.ListItemsRequest.page_token: string.max_len: ",
        " -> 1 is stricter on a request field",
    )


def test_a_removed_field_fails(protos: Protos, baseline: Image) -> None:
    outcome = protos.edit(
        "ListItemsRequest", "bool show_deleted = 4 [(google.api.field_behavior) = OPTIONAL];", ""
    ).gate(baseline)
    assert not outcome.passed
    assert outcome.breaking.returncode != 0
    assert '"show_deleted"' in outcome.breaking.stdout, outcome.breaking.stdout


def test_a_loosened_response_rule_fails(protos: Protos, baseline: Image) -> None:
    outcome = protos.edit("Item", "max_len: 32", "max_len: 1000000").gate(baseline)
    assert_reported(
        outcome, f"{VAULT}: platform.v1.Item.kind: string.max_len: ", " -> 1000000 is looser on a response field"
    )


def test_a_changed_pattern_on_a_message_sent_and_answered_fails_both_ways(protos: Protos, baseline: Image) -> None:
    # WrappedKey travels in CreateItemRequest and in every Item answered.
    id_pattern = 'pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$"'
    outcome = protos.edit("WrappedKey", id_pattern, 'pattern: "^[A-Za-z0-9][A-Za-z0-9._-]*$"').gate(baseline)
    field = f"{VAULT}: platform.v1.WrappedKey.recipient_id: string.pattern: "
    assert_reported(outcome, field, " is stricter on a request field")
    assert_reported(outcome, field, " is looser on a response field")


def test_a_cel_rule_added_to_a_request_message_fails(protos: Protos, baseline: Image) -> None:
    rule = 'option (buf.validate.message).cel = {id: "probe", expression: "this.page_size != 7"};'
    outcome = protos.add("ListItemsRequest", rule).gate(baseline)
    assert_reported(
        outcome,
        f"{VAULT}: platform.v1.ListItemsRequest.(message): cel[probe]: (none) -> ",
        " is stricter on a request message",
    )


def test_added_optional_fields_pass(protos: Protos, baseline: Image) -> None:
    protos.add(
        "ListItemsRequest",
        "// probe: a new filter.\n  optional string probe = 99 [(buf.validate.field).string.max_len = 64];",
    )
    protos.add("Item", "// probe: a new output.\n  string probe = 99;")
    outcome = protos.gate(baseline)
    assert outcome.passed, (outcome.breaking.stdout, outcome.violations)


def test_loosened_request_rules_pass(protos: Protos, baseline: Image) -> None:
    protos.edit("ListItemsRequest", "int32.gte = 0", "int32.gte = -1000000").edit(
        "ListItemsRequest", "max_len: 1024", "max_len: 1000000"
    )
    outcome = protos.gate(baseline)
    assert outcome.passed, (outcome.breaking.stdout, outcome.violations)


def test_a_new_request_field_must_accept_its_absence(protos: Protos, baseline: Image) -> None:
    """Old clients never set it: a uuid rule that refuses "" would refuse them all."""
    outcome = protos.add(
        "DeleteItemRequest", "// probe: a uuid.\n  string probe = 99 [(buf.validate.field).string.uuid = true];"
    ).gate(baseline)
    expected = "string.uuid: (a new field) -> refuses the field unset is stricter on a request field"
    assert outcome.violations == [f"{VAULT}: platform.v1.DeleteItemRequest.probe: {expected}"]


def test_a_new_request_field_that_ignores_its_absence_passes(protos: Protos, baseline: Image) -> None:
    declaration = (
        "// probe: a uuid, when set.\n  string probe = 99 [\n"
        "    (buf.validate.field).ignore = IGNORE_IF_ZERO_VALUE,\n"
        "    (buf.validate.field).string.uuid = true\n  ];"
    )
    outcome = protos.add("DeleteItemRequest", declaration).gate(baseline)
    assert outcome.passed, (outcome.breaking.stdout, outcome.violations)


# google.api.field_behavior (AIP-203): buf breaking does not compare it, check_rules does.

SHOW_DELETED = "bool show_deleted = 4 [(google.api.field_behavior) = OPTIONAL];"


def behavior_change(field: str, old: str, new: str, why: str, role: str = "request") -> str:
    return f"{VAULT}: platform.v1.{field}: google.api.field_behavior: {old} -> {new}: {why} on a {role} field (AIP-203)"


def test_an_optional_request_field_made_required_fails_though_buf_breaking_passes(
    protos: Protos, baseline: Image
) -> None:
    required = SHOW_DELETED.replace("OPTIONAL", "REQUIRED")
    outcome = protos.edit("ListItemsRequest", SHOW_DELETED, required).gate(baseline)
    assert outcome.breaking.returncode == 0, outcome.breaking.stdout  # buf compares no field behavior
    assert outcome.violations == [
        behavior_change("ListItemsRequest.show_deleted", "[OPTIONAL]", "[REQUIRED]", "REQUIRED added")
    ]


def test_a_new_required_request_field_fails(protos: Protos, baseline: Image) -> None:
    declaration = "// probe: required.\n  bool probe = 99 [(google.api.field_behavior) = REQUIRED];"
    outcome = protos.add("ListItemsRequest", declaration).gate(baseline)
    assert outcome.violations == [
        behavior_change("ListItemsRequest.probe", "(a new field)", "[REQUIRED]", "REQUIRED on a new field")
    ]


def test_output_only_or_immutable_added_to_a_request_field_fails(protos: Protos, baseline: Image) -> None:
    # EncryptedPayload is sent and answered: the request role is the one broken.
    aad = "string aad = 3 [\n    (google.api.field_behavior) = OPTIONAL,"
    protos.edit("EncryptedPayload", aad, aad.replace("OPTIONAL", "OUTPUT_ONLY"))
    kind = "string kind = 3 [\n    (google.api.field_behavior) = OPTIONAL,"
    protos.edit("UpdateItemRequest", kind, kind + "\n    (google.api.field_behavior) = IMMUTABLE,")
    outcome = protos.gate(baseline)
    assert outcome.violations == [
        behavior_change("EncryptedPayload.aad", "[OPTIONAL]", "[OUTPUT_ONLY]", "OUTPUT_ONLY added"),
        behavior_change("UpdateItemRequest.kind", "[OPTIONAL]", "[OPTIONAL, IMMUTABLE]", "IMMUTABLE added"),
    ]


def test_output_only_removed_from_a_field_a_request_now_carries_fails(protos: Protos, baseline: Image) -> None:
    """Item becomes part of a request: a client sends back what it was answered, output-only
    fields included, and the server must keep ignoring them."""
    protos.add("ListItemsRequest", "// probe: an item.\n  Item probe = 99 [(google.api.field_behavior) = OPTIONAL];")
    title_hash = "string title_hash = 6 [\n    (google.api.field_behavior) = OUTPUT_ONLY,"
    protos.edit("Item", title_hash, title_hash.replace("OUTPUT_ONLY", "OPTIONAL"))
    outcome = protos.gate(baseline)
    assert outcome.violations == [
        behavior_change("Item.title_hash", "[OUTPUT_ONLY]", "[OPTIONAL]", "OUTPUT_ONLY removed"),
    ]


def test_input_only_added_to_a_response_field_fails(protos: Protos, baseline: Image) -> None:
    kind = "string kind = 5 [\n    (google.api.field_behavior) = OUTPUT_ONLY,"
    outcome = protos.edit("Item", kind, kind + "\n    (google.api.field_behavior) = INPUT_ONLY,").gate(baseline)
    assert outcome.violations == [
        behavior_change("Item.kind", "[OUTPUT_ONLY]", "[OUTPUT_ONLY, INPUT_ONLY]", "INPUT_ONLY added", "response"),
    ]


def test_field_behavior_changes_that_break_no_client_pass(protos: Protos, baseline: Image) -> None:
    """AIP-203's compatible changes: OPTIONAL removed, REQUIRED made OPTIONAL, IMMUTABLE removed;
    and IMMUTABLE added where no request carries the field (Cursor is only answered)."""
    output_only, immutable = "(google.api.field_behavior) = OUTPUT_ONLY", "(google.api.field_behavior) = IMMUTABLE"
    protos.edit("ListItemsRequest", SHOW_DELETED, "bool show_deleted = 4;")
    vault_id = "string vault_id = 1 [\n    (google.api.field_behavior) = REQUIRED,"
    protos.edit("GetItemRequest", vault_id, vault_id.replace("REQUIRED", "OPTIONAL"))
    item_id = f"string item_id = 1 [\n    {output_only},\n    {immutable},"
    protos.edit("Item", item_id, f"string item_id = 1 [\n    {output_only},")
    epoch = f"string epoch = 3 [{output_only}];"
    protos.edit("Cursor", epoch, f"string epoch = 3 [\n    {output_only},\n    {immutable}\n  ];")
    outcome = protos.gate(baseline)
    assert outcome.passed, (outcome.breaking.stdout, outcome.violations)
