"""ToolContext: the CallbackContext of one function call, with its actions, memory, auth and
confirmation."""

from typing import Any

from app.auth.auth_credential import AuthCredential, wire
from app.auth.auth_handler import AuthHandler
from app.auth.auth_tool import AuthConfig
from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext
from app.memory.base import SearchMemoryResponse
from app.sessions.models import EventActions
from app.sessions.tool_confirmation import ToolConfirmation


class ToolContext(CallbackContext):
    """What a tool and its callbacks may read and change for one function call."""

    def __init__(
        self,
        invocation_context: InvocationContext,
        *,
        function_call_id: str | None = None,
        event_actions: EventActions | None = None,
        tool_confirmation: ToolConfirmation | None = None,
    ) -> None:
        super().__init__(invocation_context, event_actions=event_actions)
        self.function_call_id = function_call_id
        #: The person's answer when a call that asked for confirmation runs again; else None.
        self.tool_confirmation = tool_confirmation

    @property
    def idempotency_key(self) -> str:
        """The same for every execution of this function call, and only for it.

        Tools run at least once: when the process running an invocation dies mid-tool, the
        process that takes the invocation over runs the calls that have no stored response
        again. A tool with side effects passes this key to what it calls (a payment API's
        Idempotency-Key, a unique column) so a second execution does nothing twice.
        """
        return f"{self._invocation_context.invocation_id}:{self.function_call_id or ''}"

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

    def request_confirmation(self, *, hint: str | None = None, payload: Any | None = None) -> None:
        """Ask the person to approve this call (ADK's `request_confirmation`).

        Recorded as `actions.requested_tool_confirmations[function_call_id]` (ToolConfirmation's
        JSON by alias, as ADK's event carries it). After the function-response event the agent
        emits an `adk_request_confirmation` call and the invocation waits; once answered, the
        tool runs again with `tool_confirmation` set (a denied call is answered with a refusal
        and does not run).
        """
        if not self.function_call_id:
            raise ValueError("function_call_id is not set.")
        request = ToolConfirmation(hint=hint or "", payload=payload)
        self._event_actions.requested_tool_confirmations[self.function_call_id] = request.wire()

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The credential the client sent back for `auth_config` in this invocation, or None
        (kept in temp state under `"temp:" + credential_key`, as ADK keeps it)."""
        handler = AuthHandler(AuthConfig.model_validate(auth_config))
        return handler.get_auth_response(self.state)
