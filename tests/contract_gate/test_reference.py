"""docs/reference.md (scripts/gen_reference.py): everything of platform.v1, with an anchor each.

`make check-gen-clean` holds the committed file to what `make gen` writes; this checks what it writes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.gen_reference import PACKAGE, Reference
from scripts.protoimage import Image

pytestmark = pytest.mark.e2e  # runs buf

REPO = Path(__file__).resolve().parents[2]
BUF = str(Path(sys.executable).parent / "buf")


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    path = tmp_path_factory.mktemp("reference") / "image.binpb"
    subprocess.run([BUF, "build", "proto", "-o", str(path)], cwd=REPO, check=True)
    return Image.load(path)


def test_every_element_has_an_anchor(image: Image) -> None:
    markdown = Reference(image).markdown()
    names = []
    for file in (file for file in image.files if file.package == PACKAGE):
        for service in file.service:
            names += [f"{PACKAGE}.{service.name}", *(f"{PACKAGE}.{service.name}.{m.name}" for m in service.method)]
        for enum in file.enum_type:
            names += [f"{PACKAGE}.{enum.name}", *(f"{PACKAGE}.{enum.name}.{v.name}" for v in enum.value)]
        for message in file.message_type:
            names += [f"{PACKAGE}.{message.name}", *(f"{PACKAGE}.{message.name}.{f.name}" for f in message.field)]
    assert len(names) > 50
    assert [name for name in names if f'<a id="{name}"></a>' not in markdown] == []


def test_a_field_shows_its_json_name_type_rules_and_comment(image: Image) -> None:
    markdown = Reference(image).markdown()
    entry = markdown.split('<a id="platform.v1.ListItemsRequest.page_size"></a>', 1)[1].split("\n- ", 1)[0]
    assert entry.startswith("**`page_size`** · JSON `pageSize` · `int32` · field 2")
    assert "`int32.gte: 0`" in entry
    assert "The most items in one page" in entry
