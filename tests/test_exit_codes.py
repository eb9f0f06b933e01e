"""Exit codes have one table (embedselect.errors.EXIT_CODES): the error classes and README.md follow it."""

from __future__ import annotations

import re
from pathlib import Path

import embedselect.errors as errors
from embedselect.errors import EXIT_CODES, EmbedselectError

README = Path(__file__).resolve().parents[1] / "README.md"


def _all_subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_all_subclasses(sub)]
    return out


def test_every_error_class_exits_with_a_code_of_the_table() -> None:
    classes = [EmbedselectError, *_all_subclasses(EmbedselectError)]
    assert len(classes) > 10
    for cls in classes:
        assert cls.exit_code in EXIT_CODES.values(), cls.__name__


def test_the_error_classes_take_their_codes_from_the_table_not_from_literals() -> None:
    src = Path(errors.__file__).read_text(encoding="utf-8")
    assert not re.search(r"exit_code(: int)? = \d", src)


def test_the_readme_lists_exactly_the_codes_of_the_table() -> None:
    text = README.read_text(encoding="utf-8")
    para = text[text.index("Exit codes:"):]
    para = para[: para.index("\n\n")]
    listed = {int(m) for m in re.findall(r"(?:^|·|:)\s*(\d+)\s", para)}
    assert listed == set(EXIT_CODES.values())
