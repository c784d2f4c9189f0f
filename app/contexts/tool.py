"""ToolContext: the CallbackContext of one function call, with its actions, memory and auth."""

from app.auth.auth_credential import AuthCredential, wire
from app.auth.auth_handler import AuthHandler
from app.auth.auth_tool import AuthConfig
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

    def request_credential(self, auth_config: AuthConfig) -> None:
        """Ask the client for a credential for this call (ADK's `request_credential`).

        Recorded as `actions.requested_auth_configs[function_call_id]` (the config's JSON by
        alias, as ADK's event carries it); after the function-response event the agent emits an
        `adk_request_credential` call, and once the client answers it the tool runs again.
        """
        if not self.function_call_id:
            raise ValueError("function_call_id is not set.")
        request = AuthHandler(AuthConfig.model_validate(auth_config)).generate_auth_request()
        self._event_actions.requested_auth_configs[self.function_call_id] = wire(request)

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential the client sent back for `auth_config` in this invocation, or None
        (kept in temp state under `"temp:" + credential_key`, as ADK keeps it)."""
        handler = AuthHandler(AuthConfig.model_validate(auth_config))
        return handler.get_auth_response(self.state)
