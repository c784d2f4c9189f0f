"""ToolConfirmation: a tool call's request for a person's approval, and the person's answer.

ADK's model and wire shape: `{"hint": str, "confirmed": bool, "payload": any}` (camelCase
aliases, either casing accepted, unknown fields refused). It sits below the contexts because
`ToolContext.request_confirmation` builds one; tools import it from `app.tools`.
"""

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


class ToolConfirmation(BaseModel):
    """What a tool asks the user to confirm (`hint`, `payload`), and the answer (`confirmed`)."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    #: Why the confirmation is needed, shown to the person.
    hint: str = ""
    #: Whether the person approved the call.
    confirmed: bool = False
    #: Custom JSON data the tool offers, or the person sends back with the answer.
    payload: Any | None = None

    def wire(self) -> dict[str, Any]:
        """The JSON form ADK puts on events and `adk_request_confirmation` calls."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_answer(cls, response: dict[str, Any] | None) -> "ToolConfirmation":
        """The answer a client's `adk_request_confirmation` function response carries, or
        ValueError (a ValidationError naming the field) when it is not one.

        Accepts the ToolConfirmation JSON itself or ADK's client wrapper
        `{"response": "<that JSON as a string>"}`. Validation is strict: `confirmed` must be
        there and a JSON boolean (`"yes"`, `1`, `"true"` and null are not answers).
        """
        data: Any = response or {}
        if isinstance(data, dict) and len(data) == 1 and isinstance(data.get("response"), str):
            data = json.loads(data["response"])
        if not isinstance(data, dict) or "confirmed" not in data:
            raise ValueError("A confirmation answer is an object with `confirmed`: true or false.")
        return cls.model_validate(data, strict=True)

    @classmethod
    def from_response(cls, response: dict[str, Any] | None) -> "ToolConfirmation":
        """The answer a stored `adk_request_confirmation` function response carries.

        As `from_answer`, but an answer that does not parse is a denial, as in ADK, so a
        malformed answer can never run a tool. (The server refuses such answers before storing
        them, with the same rule; this guards answers stored by other means.)
        """
        try:
            return cls.from_answer(response)
        except (ValueError, ValidationError):
            return cls(confirmed=False)
