"""Shared wire types: the JSON base model, client-supplied google-genai types, ids and seqs.

Every package that speaks JSON to clients (sessions, artifacts, invocations, memory, the API)
builds on these, so they live below all of them.
"""

import enum
import math
import re
from typing import Annotated, Any

from google.genai import types
from pydantic import BaseModel, ConfigDict, ValidatorFunctionWrapHandler, WrapValidator
from pydantic.alias_generators import to_camel

from app.errors import InvalidIdentifier, UnstorableValue

#: Ids of apps, users and sessions: no slashes, dots-only names, whitespace or control characters,
#: so an id can never be a path segment that escapes anything.
ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.@:+=~-]{0,127}$"
_ID_RE = re.compile(ID_PATTERN)

#: Largest seq a client may name (a BIGINT column; larger values would overflow the driver).
MAX_SEQ = 2**62


def validate_id(kind: str, value: str) -> str:
    """Return `value` if it is a valid id, else raise InvalidIdentifier."""
    if not _ID_RE.fullmatch(value):
        raise InvalidIdentifier(f"{kind} {value!r} must match {ID_PATTERN}.", field=kind)
    return value


#: The integers every layer round-trips exactly: the orjson encoder on the serving path and the
#: database's JSON columns hold [-2**63, 2**64 - 1]; beyond it a value would be refused (a 5xx) or
#: silently turned into a float, so it is refused up front instead.
MIN_JSON_INT = -(2**63)
MAX_JSON_INT = 2**64 - 1

#: Why a NUL is refused (PostgreSQL's text and JSONB cannot hold it; SQLite could).
_NUL_REASON = "{} contains NUL (\\u0000); it cannot be stored."

#: Where a value sits in a JSON document: keys and list indexes from the root (as in pydantic's
#: `loc`), e.g. ("body", "state", "k").
Loc = tuple[str | int, ...]


def find_unstorable(value: Any, loc: Loc = ()) -> tuple[Loc, str] | None:
    """The first value JSON storage cannot keep as it is, with the reason; None if all can be kept.

    Python's json module (and so FastAPI) accepts what UTF-8 JSON cannot hold: lone surrogates
    (`"\\ud800"`), NaN and Infinity (also a number like 1e999 that overflows to it), and integers
    of any size; and PostgreSQL refuses NUL (`"\\u0000"`) in text and JSONB, in a string or a
    key, which SQLite keeps. Stored, they become a 5xx or a silent change (NaN as null), and NUL
    would be stored on one backend and refused on the other, so every value that enters storage
    is checked here first. Iterative, so a deeply nested document cannot exhaust the stack.
    """
    pending: list[tuple[Loc, Any]] = [(loc, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return where, _NUL_REASON.format("String")
            if not item.isascii() and not _is_utf8(item):
                return where, "String contains a lone surrogate; it cannot be stored as UTF-8."
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if isinstance(key, str):
                    if "\x00" in key:
                        return (*where, key), _NUL_REASON.format("Key")
                    if not key.isascii() and not _is_utf8(key):
                        return (
                            *where,
                            key,
                        ), "Key contains a lone surrogate; it cannot be stored as UTF-8."
                pending.append(((*where, key), child))
        elif isinstance(item, list | tuple):
            pending.extend(((*where, i), child) for i, child in reversed(list(enumerate(item))))
        elif isinstance(item, float):
            if not math.isfinite(item):
                return (
                    where,
                    "Number is not finite (NaN, Infinity or an overflow); JSON has no such value.",
                )
        elif isinstance(item, int) and not isinstance(item, bool):
            if not MIN_JSON_INT <= item <= MAX_JSON_INT:
                return (
                    where,
                    f"Integer outside [{MIN_JSON_INT}, {MAX_JSON_INT}] cannot be stored exactly.",
                )
    return None


def check_storable(value: Any, loc: Loc) -> None:
    """Raise UnstorableValue (a 422 naming the field) if `value` cannot be stored as it is."""
    found = find_unstorable(value, loc)
    if found is not None:
        where, reason = found
        raise unstorable(where, reason)


def unstorable(loc: Loc, reason: str) -> UnstorableValue:
    """The 422 problem for a value at `loc`: `detail` names the field, `errors` as pydantic's.

    A key that is itself unstorable is named by its escapes (`\\ud800`, `\\u0000`), or the
    answer could not be encoded either.
    """
    safe = printable_loc(loc)
    field = ".".join(str(part) for part in safe)
    return UnstorableValue(
        f"{field}: {reason}",
        errors=[{"type": "unstorable_value", "loc": safe, "msg": reason}],
    )


def printable_loc(loc: Loc) -> list[str | int]:
    """`loc` as an answer can carry it: keys that cannot be encoded (a lone surrogate) or would
    be invisible (NUL) are written as their escapes."""
    return [
        part.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\u0000")
        if isinstance(part, str)
        else part
        for part in loc
    ]


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _reject_crashes(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    # google-genai's enum lookup raises AttributeError on some invalid inputs (e.g. a null in a
    # list of enums) instead of ValueError, which pydantic would turn into a 500; make it a 422.
    try:
        validated = handler(value)
    except (AttributeError, TypeError, KeyError) as exc:
        raise ValueError(f"invalid value: {exc}") from exc
    _reject_unknown_enums(validated)
    return validated


def _reject_unknown_enums(value: Any) -> None:
    """Raise ValueError for an enum value google-genai accepted but does not declare.

    Its enums take unknown names (for newer APIs) as pseudo-members; from a client that is a
    value agentd's own OpenAPI document forbids, and it would be stored and served back.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, enum.Enum):
            if item.name not in type(item).__members__:
                allowed = ", ".join(type(item).__members__)
                raise ValueError(f"{item.value!r} is not one of {allowed}")
        elif isinstance(item, BaseModel):
            pending.extend(getattr(item, name) for name in type(item).model_fields)
        elif isinstance(item, list):
            pending.extend(item)


#: The validator of client-supplied values that hold google-genai types (`Annotated[Model,
#: ClientSupplied]`): invalid input is a validation error, always.
ClientSupplied = WrapValidator(_reject_crashes)

#: google-genai types as accepted from clients: invalid input is a validation error, always.
ClientContent = Annotated[types.Content, ClientSupplied]
ClientPart = Annotated[types.Part, ClientSupplied]


class WireModel(BaseModel):
    """Base of every JSON wire model: camelCase out, both casings in."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        arbitrary_types_allowed=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready dict: camelCase keys, None omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
