"""ToolContext: the CallbackContext of one function call, with its actions, memory and auth."""

from typing import Any

from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext
from app.memory.base import SearchMemoryResponse
from app.sessions.models import EventActions


class ToolContext(CallbackContext):
    """What a tool and its callbacks may read and change for one function call."""

    def __init__(
        self,
        invocation_context: InvocationContext,
        *,
        function_call_id: str | None = None,
        event_actions: EventActions | None = None,
    ) -> None:
        super().__init__(invocation_context, event_actions=event_actions)
        self.function_call_id = function_call_id

    @property
    def actions(self) -> EventActions:
        """skip_summarization, escalate, transfer_to_agent ... of the function-response event."""
        return self._event_actions

    async def search_memory(self, query: str) -> SearchMemoryResponse:
        """Keyword search over the user's remembered sessions of this app."""
        memory = self._invocation_context.memory_service
        if memory is None:
            raise ValueError("Memory service is not available.")
        return await memory.search_memory(app_name=self.app_name, user_id=self.user_id, query=query)

    def request_credential(self, auth_config: Any) -> None:
        """Ask the client for credentials for this call (recorded in requestedAuthConfigs)."""
        if not self.function_call_id:
            raise ValueError("request_credential needs a function call id.")
        payload = (
            auth_config.model_dump(mode="json", by_alias=True, exclude_none=True)
            if hasattr(auth_config, "model_dump")
            else auth_config
        )
        self._event_actions.requested_auth_configs[self.function_call_id] = payload

    def get_auth_response(self, auth_config: Any) -> Any:  # noqa: ARG002 - ADK signature
        """The credential the client sent back for this call, if any (kept in temp state)."""
        return self.state.get(f"temp:auth_response:{self.function_call_id}")
