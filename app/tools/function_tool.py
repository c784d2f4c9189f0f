"""FunctionTool: a plain Python function as a tool, declared from its signature and docstring.

Parameter types come from the type hints (str, int, float, bool, list[...], dict, Optional,
Literal, Enum, pydantic models), descriptions from the docstring's `Args:` section, and required
parameters are those without a default. A parameter named `tool_context` is injected, never
declared. A non-dict return value is wrapped as `{"result": value}`, as ADK does.

Arguments are checked against the type hints (pydantic, lax mode: "3" for an int is 3, a dict
for a pydantic model becomes the model, as ADK converts it) before the function runs. A call the
model got wrong is answered, not raised: missing arguments with ADK's own message, values of the
wrong type with `{"error": "Invalid arguments for tool `f()`: 'n' should be a valid integer
(got 'abc'); ..."}`, so the model can correct itself and the invocation goes on (a pydantic
ValidationError raised inside the function would fail the invocation instead). A parameter whose
type pydantic cannot check (an arbitrary class) is passed as given, as before; `None` for a
parameter with a default is passed as given too (models send null for "not set").

`require_confirmation` (True, or a callable over the call's arguments, sync or async, that may
also take `tool_context`) makes a call ask the person first: without an answer the function does
not run, the call records a confirmation request and answers with ADK's "requires confirmation"
error; once confirmed it runs; denied, it answers ADK's "rejected" error.
"""

import enum
import inspect
import re
import types as pytypes
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Union, get_args, get_origin

from google.genai import types
from pydantic import BaseModel, ConfigDict, PydanticUserError, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError

from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool

_INJECTED = {"tool_context", "input_stream"}

#: A tool's confirmation rule: always, never, or decided per call from its arguments.
RequireConfirmation = bool | Callable[..., bool | Awaitable[bool]]

#: ADK's function responses for a call awaiting confirmation and for a denied call.
CONFIRMATION_REQUIRED = {"error": "This tool call requires confirmation, please approve or reject."}
CONFIRMATION_REJECTED = {"error": "This tool call is rejected."}
_SIMPLE = {
    str: types.Type.STRING,
    int: types.Type.INTEGER,
    float: types.Type.NUMBER,
    bool: types.Type.BOOLEAN,
}


def schema_for(annotation: Any) -> types.Schema:
    """A google-genai Schema for a Python type annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return types.Schema(type=types.Type.STRING)
    origin = get_origin(annotation)
    if origin in (Union, pytypes.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        schema = (
            schema_for(members[0])
            if len(members) == 1
            else types.Schema(any_of=[schema_for(m) for m in members])
        )
        if type(None) in get_args(annotation):
            schema.nullable = True
        return schema
    if origin is Literal:
        values = get_args(annotation)
        return types.Schema(type=types.Type.STRING, enum=[str(v) for v in values])
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set):
        items = get_args(annotation)
        return types.Schema(
            type=types.Type.ARRAY, items=schema_for(items[0]) if items else types.Schema()
        )
    if origin is dict or annotation is dict:
        return types.Schema(type=types.Type.OBJECT)
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return types.Schema(type=types.Type.STRING, enum=[str(m.value) for m in annotation])
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        hints = typing.get_type_hints(annotation)
        return types.Schema(
            type=types.Type.OBJECT,
            properties={name: schema_for(hints.get(name, Any)) for name in annotation.model_fields},
            required=[n for n, f in annotation.model_fields.items() if f.is_required()],
        )
    if annotation in _SIMPLE:
        return types.Schema(type=_SIMPLE[annotation])
    return types.Schema(type=types.Type.STRING)


#: Lax, and numbers taken for strings: a model that sends 42 for a name meant "42".
_ARGUMENT_CONFIG = ConfigDict(coerce_numbers_to_str=True)
#: How much of a wrong value an argument error quotes.
_QUOTED = 60


def _adapter(annotation: Any) -> TypeAdapter[Any] | None:
    """A validator for one parameter's type; None when there is nothing pydantic can check."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    try:
        try:
            return TypeAdapter(annotation, config=_ARGUMENT_CONFIG)
        except PydanticUserError:  # a type with a config of its own (a pydantic model)
            return TypeAdapter(annotation)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError):
        return None


def _describe(name: str, error: Any) -> str:
    """One argument error as the model reads it: `'n' should be a valid integer (got 'x')`."""
    where = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
    message = str(error["msg"])
    if message.startswith("Input should"):
        message = message[len("Input ") :]
    if error["type"] == "missing":
        return f"'{where}' is required"
    quoted = repr(error.get("input"))
    if len(quoted) > _QUOTED:
        quoted = quoted[: _QUOTED - 3] + "..."
    return f"'{where}' {message[:1].lower()}{message[1:]} (got {quoted})"


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before `Args:`) and the per-parameter descriptions."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = line.strip().rstrip(":").lower()
        if line.strip().endswith(":") and header in {"args", "arguments", "parameters"}:
            section = "args"
            continue
        if line.strip().endswith(":") and header in {"returns", "raises", "yields", "example"}:
            section = "other"
            continue
        if section is None:
            summary.append(line)
        elif section == "args":
            match = re.match(r"^\s+(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}"
    return "\n".join(summary).strip(), params


class FunctionTool(BaseTool):
    """Wraps a sync or async function."""

    def __init__(
        self, func: Callable[..., Any], *, require_confirmation: RequireConfirmation = False
    ) -> None:
        summary, _ = _docstring_parts(inspect.getdoc(func) or "")
        super().__init__(name=getattr(func, "__name__", type(func).__name__), description=summary)
        self.func = func
        self._signature = inspect.signature(func)
        self._require_confirmation = require_confirmation
        self._adapters: dict[str, TypeAdapter[Any] | None] | None = None

    def get_declaration(self) -> types.FunctionDeclaration:
        """Parameters from the signature; descriptions from the docstring."""
        _, descriptions = _docstring_parts(inspect.getdoc(self.func) or "")
        try:
            hints = typing.get_type_hints(self.func)
        except Exception:  # unresolved forward references: fall back to raw annotations
            hints = {}
        properties: dict[str, types.Schema] = {}
        required: list[str] = []
        for name, param in self._signature.parameters.items():
            if name in _INJECTED or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = schema_for(hints.get(name, param.annotation))
            if name in descriptions:
                schema.description = descriptions[name]
            properties[name] = schema
            if param.default is inspect.Parameter.empty:
                required.append(name)
        parameters = (
            types.Schema(type=types.Type.OBJECT, properties=properties, required=required or None)
            if properties
            else None
        )
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters=parameters
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Call the function with the declared arguments (and tool_context if it asks)."""
        params = self._signature.parameters
        accepts_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        call_args = {k: v for k, v in args.items() if k in params or accepts_kwargs}
        call_args = {k: v for k, v in call_args.items() if k not in _INJECTED}
        missing = [
            name
            for name, p in params.items()
            if p.default is inspect.Parameter.empty
            and name not in _INJECTED
            and name not in call_args
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        call_args, problems = self._validated(call_args)
        if missing and not problems:
            return {
                "error": f"Invoking `{self.name}()` failed as the following mandatory input "
                f"parameters are not present: {', '.join(missing)}. You could retry calling this "
                "tool, but it is IMPORTANT for you to provide all the mandatory parameters."
            }
        if problems:
            problems += [f"'{name}' is required" for name in missing]
            return {
                "error": f"Invalid arguments for tool `{self.name}()`: {'; '.join(problems)}. "
                "Retry the call with arguments that match the tool's parameters."
            }
        if await self.check_require_confirmation(call_args, tool_context):
            if tool_context.tool_confirmation is None:
                tool_context.request_confirmation(
                    hint=f"Please approve or reject the tool call {self.name}() by responding "
                    "with a FunctionResponse with an expected ToolConfirmation payload."
                )
                tool_context.actions.skip_summarization = True
                return dict(CONFIRMATION_REQUIRED)
            if not tool_context.tool_confirmation.confirmed:
                return dict(CONFIRMATION_REJECTED)
        if "tool_context" in params:
            call_args["tool_context"] = tool_context
        result = self.func(**call_args)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _validated(self, args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """`args` checked against the type hints: the values to call with, and what is wrong."""
        adapters = self._argument_adapters()
        params = self._signature.parameters
        values: dict[str, Any] = {}
        problems: list[str] = []
        for name, value in args.items():
            adapter = adapters.get(name)
            param = params.get(name)
            has_default = param is not None and param.default is not inspect.Parameter.empty
            if adapter is None or (value is None and has_default):
                values[name] = value
                continue
            try:
                values[name] = adapter.validate_python(value)
            except ValidationError as error:
                problems.extend(_describe(name, e) for e in error.errors())
        return values, problems

    def _argument_adapters(self) -> dict[str, TypeAdapter[Any] | None]:
        """A validator per declared parameter, built on the first call (when the hints'
        forward references can be resolved)."""
        if self._adapters is None:
            try:
                hints = typing.get_type_hints(self.func)
            except Exception:  # unresolved forward references: nothing is checked
                hints = {}
            self._adapters = {
                name: _adapter(hints.get(name, inspect.Parameter.empty))
                for name, param in self._signature.parameters.items()
                if name not in _INJECTED
                and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
            }
        return self._adapters

    async def check_require_confirmation(
        self, args: dict[str, Any], tool_context: ToolContext
    ) -> bool:
        """Whether this call needs the person's approval (ADK's `check_require_confirmation`):
        the flag, or the rule called with the arguments it names (and `tool_context`)."""
        rule = self._require_confirmation
        if not callable(rule):
            return bool(rule)
        params = inspect.signature(rule).parameters
        accepts_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        rule_args = {k: v for k, v in args.items() if k in params or accepts_kwargs}
        if "tool_context" in params:
            rule_args["tool_context"] = tool_context
        decided = rule(**rule_args)
        if inspect.isawaitable(decided):
            decided = await decided
        return bool(decided)
