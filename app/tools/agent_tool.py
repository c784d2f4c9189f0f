"""AgentTool: another agent used as a tool; its final answer is the tool's result.

The wrapped agent runs in a private in-memory session that starts with a copy of the caller's
state and has the caller's session id, so artifacts it saves are staged for the caller's session
and commit with the caller's function-response event. State it writes and artifacts it saves are
forwarded to the calling tool's context; its model calls count against the same max_llm_calls.
"""

from typing import TYPE_CHECKING, Any

from google.genai import types
from pydantic import BaseModel, TypeAdapter

from app.contexts.invocation import InvocationContext
from app.contexts.tool import ToolContext
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event
from app.sessions.state import State
from app.tools.base_tool import BaseTool

if TYPE_CHECKING:
    from app.agents.base_agent import BaseAgent


class AgentTool(BaseTool):
    """Wraps an agent so a model can call it with a `request` string (or its input_schema)."""

    def __init__(self, agent: "BaseAgent", skip_summarization: bool = False) -> None:
        super().__init__(name=agent.name, description=agent.description)
        self.agent = agent
        self.skip_summarization = skip_summarization

    def _schemas(self) -> tuple[type[BaseModel] | None, Any]:
        """The wrapped agent's input_schema and output_schema (LlmAgent fields; else None)."""
        return (
            getattr(self.agent, "input_schema", None),
            getattr(self.agent, "output_schema", None),
        )

    def get_declaration(self) -> types.FunctionDeclaration:
        """The agent's input_schema as parameters; without one, a `request` string."""
        input_schema, _ = self._schemas()
        if input_schema is not None:
            return types.FunctionDeclaration(
                name=self.name,
                description=self.description,
                parameters_json_schema=input_schema.model_json_schema(),
            )
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"request": types.Schema(type=types.Type.STRING)},
                required=["request"],
            ),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the agent on `request`; return its last text answer."""
        if self.skip_summarization:
            tool_context.actions.skip_summarization = True
        parent: InvocationContext = tool_context._invocation_context
        sessions = InMemorySessionService()
        state = {
            k: v
            for k, v in tool_context.state.to_dict().items()
            if not k.startswith(State.TEMP_PREFIX)
        }
        session = await sessions.create_session(
            app_name=parent.app_name,
            user_id=parent.user_id,
            session_id=parent.session.id,
            state=state,
        )
        input_schema, output_schema = self._schemas()
        text = (
            input_schema.model_validate(args).model_dump_json(exclude_none=True)
            if input_schema is not None
            else str(args.get("request", ""))
        )
        message = types.Content(role="user", parts=[types.Part(text=text)])
        await sessions.append_event(
            session, Event(author="user", invocation_id=parent.invocation_id, content=message)
        )
        # The wrapped agent runs in its own session (and branch) of the same invocation.
        ctx = parent.replace(
            session_service=sessions,
            agent=self.agent,
            session=session,
            user_content=message,
            branch=None,
        )
        last_text = ""
        async for event in self.agent.run_async(ctx):
            if event.partial:
                continue
            await sessions.append_event(session, event)
            for key, value in event.actions.state_delta.items():
                tool_context.state[key] = value
            tool_context.actions.artifact_delta.update(event.actions.artifact_delta)
            if event.content and event.content.parts:
                text = "".join(p.text or "" for p in event.content.parts if not p.thought)
                if text:
                    last_text = text
        ctx.shared.ended = False  # the wrapped agent ending its run does not end the caller's
        if output_schema is not None and last_text:  # ADK: structured answers stay structured
            adapter: TypeAdapter[Any] = TypeAdapter(output_schema)
            return adapter.dump_python(
                adapter.validate_json(last_text), mode="json", exclude_none=True
            )
        return last_text
