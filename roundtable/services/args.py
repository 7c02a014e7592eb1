"""How an operation declares its arguments: one pydantic model per operation (`Args`).

An operation's `Args` subclass is the one description of its input, from the argument to the
service: declared beside the service function that takes it (or beside its handler when no
service needs it), it gives the advertised JSON Schema (the registry generates it,
`tools/schema.py`), `Runtime.call` validates every call through it (`tools/refusals.py` words
the refusal), the handler receives the validated instance as `call.args`, and hands it on to the
service whole. The base lives at the services' level so that services can take it; the tool
layer above only references the models.

Every argument is bounded: fields use the types below, which carry the limit of what they hold
(an id 128 characters, a path 4,096, free text 1 MiB, an integer SQLite's 64 bits, a list
10,000 items), so a 10^30 integer or a 5,000-character path is refused before any service sees
it. Tighter bounds and enums (`Vote`, `Risk`) are declared on the field itself. Conventions the
base class applies to every operation:

- unknown arguments are refused, naming the allowed ones (`extra="forbid"`);
- types are strict (`"5"` is not an integer, `1` is not a boolean; `2.0` counts as `2`, as in
  JSON Schema);
- a required string argument must not be blank, unless the model lists it in `allow_blank`;
- an optional string argument given as `""` counts as absent (its default applies);
- the words in `CASE_FREE_WORDS` (`risk`, `vote`) are read case-insensitively (`High` is `high`).
"""

from __future__ import annotations

import re
import sys
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from annotated_types import Ge, Le, MaxLen
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, model_validator
from pydantic_core import PydanticCustomError

from roundtable.clock import is_valid_id
from roundtable.domain import ProposalStatus, Risk, Vote
from roundtable.errors import ValidationError
from roundtable.services import paging

# --- bounds -----------------------------------------------------------------------------------

INT_MIN = -(2**63)  # SQLite INTEGER is a signed 64-bit value
INT_MAX = 2**63 - 1
FLOAT_MAX = sys.float_info.max  # finite: Infinity fails the bound (NaN is refused by the decoders)
ID_MAX = 128  # ids that become file names are 1-128 characters
WORD_MAX = 128  # enumerated words: status, risk, vote, claim_type, …
PATH_MAX = 4096  # Linux PATH_MAX
SYMBOL_MAX = 1024
RESOURCE_ID_MAX = 8192  # a type prefix, a path and a symbol name
TITLE_MAX = 500
QUERY_MAX = 4096
COMMAND_MAX = 16 * 1024
TEXT_MAX = 1024 * 1024  # Markdown bodies, reasons, notes: the services keep tighter limits of their own
PATCH_MAX = 16 * 1024 * 1024  # = services.repository.patches.MAX_PATCH_BYTES; the transports' body limits bind first
ITEMS_MAX = 10_000

# Enumerated words the services have always read case-insensitively (`High`, `APPROVE`).
CASE_FREE_WORDS = frozenset({"risk", "vote"})


def _new_id(value: str) -> str:
    if value and not is_valid_id(value):
        raise PydanticCustomError(
            "record_id", "must be 1-128 letters, digits, '.', '_' or '-' and must not start with '.'"
        )
    return value


# C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidirectional
# embeddings, overrides and isolates: what makes one line of text look like several, or reorders it.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def as_one_line(text: str) -> str:
    """`text` made a valid title: every character a title refuses becomes a space."""
    return _NOT_ONE_LINE.sub(" ", text)


def _one_line(value: str) -> str:
    """A title is one line of text: a newline or another control character in it could forge a
    heading or an instruction wherever the title is shown to an agent."""
    if found := _NOT_ONE_LINE.search(value):
        raise PydanticCustomError(
            "one_line",
            "must be one line of text without control characters (found U+{code} at position {position})",
            {"code": f"{ord(found.group(0)):04X}", "position": found.start()},
        )
    return value


# --- argument types ---------------------------------------------------------------------------

Id = Annotated[str, Strict(), MaxLen(ID_MAX)]
"""The id of a record, an agent, a run, a hash or a revision."""
NewId = Annotated[str, Strict(), MaxLen(ID_MAX), AfterValidator(_new_id)]
"""An id the caller chooses for a new record (it may become a file name): 1-128 letters,
digits, `.`, `_`, `-`, not starting with `.`."""
Word = Annotated[str, Strict(), MaxLen(WORD_MAX)]
"""A word from a vocabulary the services check (a status, a claim type, a language)."""
RepoPath = Annotated[str, Strict(), MaxLen(PATH_MAX)]
"""A repository-relative path (or a scope such as `src/`)."""
ResourceId = Annotated[str, Strict(), MaxLen(RESOURCE_ID_MAX)]
Symbol = Annotated[str, Strict(), MaxLen(SYMBOL_MAX)]
Title = Annotated[str, Strict(), MaxLen(TITLE_MAX), AfterValidator(_one_line)]
"""A title: one line, no control characters (newlines, tabs, escapes, bidirectional overrides)."""
Query = Annotated[str, Strict(), MaxLen(QUERY_MAX)]
Command = Annotated[str, Strict(), MaxLen(COMMAND_MAX)]
Text = Annotated[str, Strict(), MaxLen(TEXT_MAX)]
"""Free text: Markdown bodies, reasons, notes, names."""
Patch = Annotated[str, Strict(), MaxLen(PATCH_MAX)]
Int = Annotated[int, Strict(), Ge(INT_MIN), Le(INT_MAX)]
Count = Annotated[Int, Ge(0)]
Positive = Annotated[Int, Ge(1)]
Number = Annotated[float, Strict(), Ge(-FLOAT_MAX), Le(FLOAT_MAX)]
Flag = Annotated[bool, Strict()]
Fraction = Annotated[Number, Ge(0), Le(1)]
"""A confidence, between 0 and 1."""
Detail = Annotated[bool, Strict(), Field(description="Full records, not summaries.")]
"""`detail`: full records instead of the summaries agents are given by default."""
Object = dict[str, Any]
"""A free-form JSON object (an event payload, metadata)."""

# The vocabularies of `roundtable.domain` as argument types (a value, not only a member).
VoteWord = Annotated[Vote, Strict(False)]
RiskWord = Annotated[Risk, Strict(False)]
OpenProposalStatus = Literal[ProposalStatus.PENDING, ProposalStatus.IN_REVIEW]

Cursor = Annotated[str, Strict(), MaxLen(QUERY_MAX)]
"""A keyset-paging cursor (`next_cursor` of the previous page)."""


# Lists, at most `ITEMS_MAX` items.
Paths = Annotated[list[RepoPath], MaxLen(ITEMS_MAX)]
Texts = Annotated[list[Text], MaxLen(ITEMS_MAX)]
ResourceIds = Annotated[list[ResourceId], MaxLen(ITEMS_MAX)]
Commands = Annotated[list[Command], MaxLen(ITEMS_MAX)]


# --- the base of every operation's arguments --------------------------------------------------


def _members(annotation: Any) -> list[Any]:
    """The types a field's annotation allows, without `Annotated` metadata or `None`
    (`Id | None` is `[str]`)."""
    if get_origin(annotation) is Annotated:
        return _members(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return [m for a in get_args(annotation) if a is not type(None) for m in _members(a)]
    return [annotation]


def _allows_none(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, UnionType) and type(None) in get_args(annotation)


def _kind(annotation: Any) -> str:
    """How a refusal names a field's type: `an integer`, `a string`, …"""
    members = _members(annotation)
    if members == [int]:
        return "an integer"
    if members == [float]:
        return "a number"
    if members == [bool]:
        return "a boolean"
    return "a string" if _is_text(annotation) else "a value"


def _is_int(annotation: Any) -> bool:
    return _members(annotation) == [int]


def _is_text(annotation: Any) -> bool:
    """A string field (an enum word included): blank means absent when optional."""
    members = _members(annotation)
    return bool(members) and all(_is_one_text(m) for m in members)


def _is_one_text(annotation: Any) -> bool:
    if annotation is str:
        return True
    if isinstance(annotation, type) and issubclass(annotation, str):
        return True
    if get_origin(annotation) is Literal:
        return all(isinstance(a, str) for a in get_args(annotation))
    return False


def _is_text_list(annotation: Any) -> bool:
    members = _members(annotation)
    return len(members) == 1 and get_origin(members[0]) is list and _is_text(get_args(members[0])[0])


class Args(BaseModel):
    """The arguments of one operation (subclass per operation; fields with descriptions).

    `allow_blank` names required string arguments that may be blank (a search for everything)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, hide_input_in_errors=True)

    allow_blank: ClassVar[frozenset[str]] = frozenset()
    # Worked out once per subclass from its fields (`__pydantic_init_subclass__`).
    _blank_is_absent: ClassVar[frozenset[str]] = frozenset()
    _case_free: ClassVar[frozenset[str]] = frozenset()
    _integers: ClassVar[frozenset[str]] = frozenset()
    _nullable: ClassVar[dict[str, str]] = {}
    _not_blank: ClassVar[tuple[str, ...]] = ()
    _text_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        optional_words: set[str] = set()
        required_text: list[str] = []
        text: list[str] = []
        integers: set[str] = set()
        nullable: dict[str, str] = {}
        for name, info in cls.model_fields.items():
            if _allows_none(info.annotation):
                nullable[name] = _kind(info.annotation)
            if _is_int(info.annotation):
                integers.add(name)
            textual = _is_text(info.annotation)
            if textual or _is_text_list(info.annotation):
                text.append(name)
            if info.is_required():
                if textual and name not in cls.allow_blank:
                    required_text.append(name)
            elif textual:
                optional_words.add(name)
        cls._blank_is_absent = frozenset(optional_words)
        cls._case_free = frozenset(CASE_FREE_WORDS & set(cls.model_fields))
        cls._integers = frozenset(integers)
        cls._nullable = nullable
        cls._not_blank = tuple(required_text)
        cls._text_fields = tuple(text)

    @model_validator(mode="before")
    @classmethod
    def _prepare(cls, data: Any) -> Any:
        """An optional string given as `""` is absent; `risk`/`vote` are case-insensitive;
        `2.0` is the integer 2, as in JSON Schema (`2.5` stays a float and is refused); `null`
        is refused like any other wrong type (a field declared `X | None` is absent by default,
        never null by choice)."""
        if not isinstance(data, dict) or not (cls._blank_is_absent or cls._case_free or cls._integers or cls._nullable):
            return data
        out: dict[str, Any] | None = None
        for key, value in data.items():
            if value is None and key in cls._nullable:
                raise PydanticCustomError("null", "must be {kind}", {"field": key, "kind": cls._nullable[key]})
            if type(value) is float and key in cls._integers and value.is_integer():
                out = dict(data) if out is None else out
                out[key] = int(value)
                continue
            if not isinstance(value, str):
                continue
            word = value.strip().lower() if key in cls._case_free else value
            if word == "" and key in cls._blank_is_absent:
                out = dict(data) if out is None else out
                del out[key]
            elif word != value:
                out = dict(data) if out is None else out
                out[key] = word
        return data if out is None else out

    @model_validator(mode="after")
    def _not_blank_check(self) -> Args:
        for name in self._not_blank:
            if not getattr(self, name).strip():
                raise PydanticCustomError("blank", "must not be empty", {"field": name})
        return self

    def given(self, name: str) -> bool:
        """Whether the caller passed `name` (not merely its default)."""
        return name in self.model_fields_set


class Item(BaseModel):
    """An object inside an argument (one of `edits`): closed and strict like `Args`, and a
    blank string in it is a value (an edit's `new_string` may be empty)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, hide_input_in_errors=True)


class NoArgs(Args):
    """An operation that takes no arguments."""


class PageArgs(Args):
    """Keyset paging of the list operations (`services.paging`): subclass and add the filters."""

    limit: Annotated[Positive, Le(paging.MAX_LIMIT)] | None = Field(
        None, description=f"Rows per page (default {paging.DEFAULT_LIMIT})."
    )
    cursor: Cursor = Field("", description="next_cursor of the previous page (same filters).")


def identity(value: str, key: str, tool: str) -> str:
    """An identity argument (`agent_id`, `decided_by`): `Runtime.call` fills it from an agent's
    credential, so only a caller without one (the operator) can leave it out — and must not."""
    value = value.strip()
    if not value:
        raise ValidationError(f"{tool}: missing {key} (an agent's credential fills it; the operator must name one)")
    return value
