"""YAML with lines, and pydantic errors reported as `file:line: key: problem` (located_yaml)."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from roundtable.errors import ConfigError
from roundtable.located_yaml import Located, dotted, load_yaml, merge, overlay, validation_error


def _even(value: int) -> int:
    if value % 2:
        raise ValueError(f"must be even (got {value})")
    return value


def _lower(name: str) -> str:
    if name != name.lower():
        raise ValueError("names must be lower case")
    return name


class Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")

    flag: StrictBool = False
    size: Annotated[StrictInt, AfterValidator(_even)] = 2
    mode: Literal["fast", "safe"] = "safe"
    tags: tuple[StrictStr, ...] = ()


class Root(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = "x"
    leaf: Leaf = Leaf()
    named: dict[Annotated[str, AfterValidator(_lower)], Leaf] = Field(default_factory=dict)


def problem(text: str, *, first_line: int = 1) -> str:
    located = load_yaml(text, "f.yaml", first_line=first_line)
    try:
        Root.model_validate(located.data)
    except ValidationError as exc:
        return str(validation_error(exc, located, Root))
    raise AssertionError("valid")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nam: y\n", "f.yaml:1: nam: unknown key (allowed: leaf, name, named)"),
        ("leaf:\n\n  colour: red\n", "f.yaml:3: leaf.colour: unknown key (allowed: flag, mode, size, tags)"),
        ("named:\n  a:\n    bogus: 1\n", "f.yaml:3: named.a.bogus: unknown key (allowed: flag, mode, size, tags)"),
        ("leaf:\n  flag: yes please\n", "f.yaml:2: leaf.flag: expected true or false, got string"),
        ("leaf:\n  size: '4'\n", "f.yaml:2: leaf.size: expected an integer, got string"),
        ("leaf:\n  size: 3\n", "f.yaml:2: leaf.size: must be even (got 3)"),
        ("leaf:\n  mode: turbo\n", "f.yaml:2: leaf.mode: must be one of fast, safe (got 'turbo')"),
        ("leaf:\n  tags:\n    - a\n    - 7\n", "f.yaml:4: leaf.tags: expected a string, got integer"),
        ("leaf:\n  tags: a\n", "f.yaml:2: leaf.tags: expected a list, got string"),
        ("leaf: [1]\n", "f.yaml:1: leaf: expected a mapping, got list"),
        ("name: null\n", "f.yaml:1: name: expected a string, got null"),
        ("named:\n  Big: {}\n", "f.yaml:2: named.Big: names must be lower case"),
        ("named:\n  'a b': {size: 1}\n", "f.yaml:2: named['a b'].size: must be even (got 1)"),
    ],
)
def test_errors_map_to_file_line_and_key(text: str, expected: str) -> None:
    assert problem(text) == expected


def test_lines_count_from_the_given_first_line() -> None:
    assert problem("leaf:\n  size: 5\n", first_line=10) == "f.yaml:11: leaf.size: must be even (got 5)"


def test_every_problem_is_listed_by_line() -> None:
    assert problem("leaf:\n  size: 1\nname: 3\nnam: 1\n").splitlines() == [
        "f.yaml:2: leaf.size: must be even (got 1)",
        "f.yaml:3: name: expected a string, got integer",
        "f.yaml:4: nam: unknown key (allowed: leaf, name, named)",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1, 2\n", "f.yaml:2: invalid YAML"),
        ("a: 1\n  b: 2\n", "f.yaml:2: invalid YAML"),
        ("? [1, 2]\n: x\n", "f.yaml:1: keys must be strings (got [1, 2])"),
        ("a: 1\n---\nb: 2\n", "f.yaml:2: invalid YAML"),
    ],
)
def test_unreadable_yaml_names_the_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml(text, "f.yaml")
    assert str(info.value).startswith(expected)


def test_values_read_as_safe_load_reads_them() -> None:
    text = "base: &b {flag: true, size: 4}\nleaf:\n  <<: *b\n  size: 6\nwhen: 2024-01-02\nempty:\n"
    located = load_yaml(text, "f.yaml")
    assert located.data["leaf"] == {"flag": True, "size": 6}
    assert located.data["empty"] is None
    assert located.lines[("leaf", "size")] == (4, 4)
    assert located.lines[("leaf",)] == (2, 3)


def test_merge_follows_the_later_block() -> None:
    first = load_yaml("leaf:\n  tags: [a, b, c]\n  size: 2\n", "f.md", first_line=2)
    second = load_yaml("leaf:\n  tags: [z]\nname: y\n", "f.md", first_line=10)
    merged = merge(first, second)
    assert merged.data == {"leaf": {"tags": ["z"], "size": 2}, "name": "y"}
    assert merged.line(("leaf", "tags", 0)) == 11
    assert merged.line(("leaf", "tags", 2)) == 11  # the replaced list's third entry is gone
    assert merged.line(("leaf", "size")) == 4
    assert merged.line(("name",)) == 12


@pytest.mark.parametrize(
    ("base", "extra", "expected"),
    [
        ({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}, {"a": {"b": 1, "c": 3}}),
        ({"a": {"b": 1}}, {"a": None}, {"a": {"b": 1}}),  # an empty section changes nothing
        ({"a": [1, 2]}, {"a": []}, {"a": []}),  # lists replace
        ({"a": 1}, {"a": None}, {"a": None}),  # a null scalar is the file's value (and an error)
        ({"a": {"b": 1}}, {"z": {"y": 2}}, {"a": {"b": 1}, "z": {"y": 2}}),
    ],
)
def test_overlay(base: dict[str, object], extra: dict[str, object], expected: dict[str, object]) -> None:
    assert overlay(base, extra) == expected


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        (("a", "b"), "a.b"),
        (("risk", "high_paths", 3), "risk.high_paths"),
        (("tests", "commands", " unit", "[key]"), "tests.commands[' unit']"),
        (("x", "a.b"), "x['a.b']"),
        ((), ""),
    ],
)
def test_dotted_keys(loc: tuple[str | int, ...], expected: str) -> None:
    assert dotted(loc) == expected


def test_a_location_the_file_does_not_hold_falls_back_to_its_nearest_part() -> None:
    located = load_yaml("\nagents:\n  chair:\n    model: x\n", "config.yaml")
    assert located.where(("agents", "chair", "adapter")) == "config.yaml:4"
    assert located.where(("adapters", "codex", "command")) == "config.yaml:2"
    assert Located("config.yaml").where(("x",)) == "config.yaml"


def test_an_empty_section_in_a_later_block_keeps_the_earlier_lines() -> None:
    first = load_yaml("leaf:\n  size: 3\n", "f.md", first_line=2)
    merged = merge(first, load_yaml("leaf:\n", "f.md", first_line=20))
    assert merged.data == {"leaf": {"size": 3}}
    assert merged.line(("leaf", "size")) == 3
