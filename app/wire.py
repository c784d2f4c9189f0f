"""Shared wire types: the JSON base model, client-supplied google-genai types, ids and seqs.

Every package that speaks JSON to clients (sessions, artifacts, invocations, memory, the API)
builds on these, so they live below all of them.
"""

import re
from typing import Annotated, Any

from google.genai import types
from pydantic import BaseModel, ConfigDict, ValidatorFunctionWrapHandler, WrapValidator
from pydantic.alias_generators import to_camel

from app.errors import InvalidIdentifier

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


def _reject_crashes(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    # google-genai's enum lookup raises AttributeError on some invalid inputs (e.g. a null in a
    # list of enums) instead of ValueError, which pydantic would turn into a 500; make it a 422.
    try:
        return handler(value)
    except (AttributeError, TypeError, KeyError) as exc:
        raise ValueError(f"invalid value: {exc}") from exc


#: google-genai types as accepted from clients: invalid input is a validation error, always.
ClientContent = Annotated[types.Content, WrapValidator(_reject_crashes)]
ClientPart = Annotated[types.Part, WrapValidator(_reject_crashes)]


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
