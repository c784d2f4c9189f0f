"""A deterministic, offline model: every shipped app and test runs without network or API key.

`ScriptedLlm` answers from rules. A rule matches the latest user text (a regex) or the latest tool
result (a tool name) and replies with a function call or text; `{name}` placeholders are filled
from regex groups, the tool's call arguments and its result. With no rule matching, a built-in
default behaves like a helpful tool-using model: if tools are declared and the user has just
spoken, it calls the first tool with the user's subject ("... capital of France?" -> "France");
after a tool result it answers with that result; otherwise it says what the system instruction
asks it to say ("Just say 'X'") or "Hello!". With `stream=True` a text answer comes as two
partial chunks followed by the whole text, like a real streaming model.
"""

import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from google.genai import types
from pydantic import Field

from app.models.llm import BaseLlm, LlmRequest, LlmResponse

_SUBJECT = re.compile(r"(?:capital of|about|for)\s+(?P<subject>[^?.!]+)", re.IGNORECASE)
_SAY = re.compile(r"say\s+['\"](?P<text>[^'\"]+)['\"]", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    """One scripted reply: when the user said `when_user` (regex) or tool `when_tool` answered."""

    when_user: str | None = None
    when_tool: str | None = None
    call: tuple[str, dict[str, Any]] | None = None
    say: str | None = None


@dataclass
class _Turn:
    user_text: str | None = None
    tool_name: str | None = None
    tool_args: dict[str, Any] = field(default_factory=dict)
    tool_result: dict[str, Any] = field(default_factory=dict)


class ScriptedLlm(BaseLlm):
    """An offline model driven by `rules`, with a sensible tool-using default."""

    model: str = "scripted"
    rules: list[Rule] = Field(default_factory=list)

    @classmethod
    def supported_models(cls) -> list[str]:
        """`scripted` and `scripted-<anything>`."""
        return [r"scripted(-.*)?"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Reply to the last turn of `llm_request`."""
        turn = _last_turn(llm_request)
        reply = self._apply_rules(turn) or _default_reply(turn, llm_request)
        if reply.content and stream and reply.content.parts and reply.content.parts[0].text:
            text = reply.content.parts[0].text
            middle = max(1, len(text) // 2)
            for chunk in (text[:middle], text[middle:]):
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=chunk)]),
                    partial=True,
                )
        yield reply

    def _apply_rules(self, turn: _Turn) -> LlmResponse | None:
        for rule in self.rules:
            values: dict[str, Any] | None = None
            if rule.when_user is not None and turn.user_text is not None:
                match = re.search(rule.when_user, turn.user_text, re.IGNORECASE)
                if match:
                    values = {"text": turn.user_text, **match.groupdict()}
            elif rule.when_tool is not None and turn.tool_name == rule.when_tool:
                result = turn.tool_result.get("result", turn.tool_result)
                values = {**turn.tool_args, "result": result}
            if values is None:
                continue
            if rule.call is not None:
                name, args = rule.call
                return _call(name, {k: _fill(v, values) for k, v in args.items()})
            return _text(_fill(rule.say or "", values))
        return None


def _fill(template: Any, values: dict[str, Any]) -> Any:
    if not isinstance(template, str):
        return template
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):
        return template


def _text(text: str) -> LlmResponse:
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        partial=False,
        turn_complete=True,
    )


def _call(name: str, args: dict[str, Any]) -> LlmResponse:
    # No id: the engine assigns `adk-<uuid>` ids to calls that lack one, as ADK does.
    call = types.FunctionCall(name=name, args=args)
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        partial=False,
        turn_complete=True,
    )


def _last_turn(llm_request: LlmRequest) -> _Turn:
    """What the model is answering: the last user text, or the last tool result."""
    calls: dict[str, dict[str, Any]] = {}
    turn = _Turn()
    for content in llm_request.contents:
        for part in content.parts or []:
            if part.function_call is not None:
                calls[part.function_call.id or part.function_call.name or ""] = dict(
                    part.function_call.args or {}
                )
    last = llm_request.contents[-1] if llm_request.contents else None
    if last is None:
        return turn
    for part in last.parts or []:
        if part.function_response is not None:
            response = part.function_response
            turn.tool_name = response.name
            turn.tool_args = calls.get(response.id or response.name or "", {})
            turn.tool_result = dict(response.response or {})
        elif part.text and last.role == "user":
            turn.user_text = (turn.user_text or "") + part.text
    return turn


def _default_reply(turn: _Turn, llm_request: LlmRequest) -> LlmResponse:
    if turn.tool_name is not None:
        result = turn.tool_result.get("result", turn.tool_result)
        return _text(str(result))
    declarations = [
        declaration
        for tool in llm_request.config.tools or []
        if isinstance(tool, types.Tool)
        for declaration in tool.function_declarations or []
    ]
    if turn.user_text is not None and declarations:
        declaration = declarations[0]
        properties = declaration.parameters.properties if declaration.parameters else None
        args: dict[str, Any] = {}
        if properties:
            match = _SUBJECT.search(turn.user_text)
            subject = match.group("subject").strip() if match else turn.user_text.strip()
            args[next(iter(properties))] = subject
        return _call(declaration.name or "", args)
    said = _SAY.search(llm_request.system_instruction_text())
    return _text(said.group("text") if said else "Hello!")
