"""OpenAPIToolset: every operation of an OpenAPI document as a tool (ADK's `openapi_toolset`).

The document (a dict, or a JSON or YAML string) is parsed once, when the toolset is built: one
RestApiTool per operation, named after its operationId. Calls go to the document's first server
URL, or to `base_url` when given; the tools share one HTTP client, closed by `close()`.

Credentials: `auth_scheme` and `auth_credential` (an API key or a bearer token, built with
`auth_helpers.token_to_scheme_credential`) are sent with the operations whose security
requirement (their own `security`, else the document's) names a scheme of that kind: an API key
answers `apiKey` schemes; a bearer token answers `http` bearer, `oauth2` and `openIdConnect`
ones. A document that declares no security requirement at all gets the credential on every
operation, as ADK gives it to every tool; otherwise operations that need none never see it.
agentd runs no OAuth2 exchange and no interactive credential request: a credential it cannot send
(a service account, an OAuth2 client, HTTP basic) is a ValueError when the toolset is built.

Destinations: calls to loopback, private, link-local or reserved addresses are refused unless
`allow_private_network_access=True` (see rest_api_tool), as are redirects and non-http(s) URLs.
"""

import json
import logging
import ssl
from typing import Any, Literal

import httpx
import yaml

from app.auth.auth_credential import AuthCredential, AuthCredentialTypes
from app.auth.auth_schemes import AuthScheme
from app.contexts.readonly import ReadonlyContext
from app.tools.base_tool import BaseTool
from app.tools.base_toolset import BaseToolset, ToolPredicate
from app.tools.openapi_tool.auth.auth_helpers import request_auth
from app.tools.openapi_tool.openapi_spec_parser.openapi_spec_parser import (
    JsonObject,
    OpenApiSpecParser,
    ParsedOperation,
)
from app.tools.openapi_tool.openapi_spec_parser.rest_api_tool import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT,
    HeaderProvider,
    RestApiClient,
    RestApiTool,
)

logger = logging.getLogger(__name__)


class OpenAPIToolset(BaseToolset):
    """The operations of an OpenAPI document as tools.

    Args:
        spec_dict: the document; else `spec_str`, parsed as `spec_str_type` ("json" or "yaml").
        auth_scheme, auth_credential: the credential sent with the operations that require it.
        base_url: where calls go, instead of the document's first server URL (which must then
            be absolute).
        timeout: seconds one call may take, connection to last byte.
        max_response_bytes: the largest answer read (1 MiB by default); a larger one is an
            error result.
        allow_private_network_access: allow calls to loopback and private addresses (a
            service on the same host or network); off, they are refused.
        ssl_verify: False, a CA bundle's path or an SSLContext, instead of the system's CAs.
        header_provider: extra headers for each call, from the calling context (ADK's).
        preserve_property_names: keep the document's argument names instead of snake_case.
    """

    def __init__(
        self,
        *,
        spec_dict: JsonObject | None = None,
        spec_str: str | None = None,
        spec_str_type: Literal["json", "yaml"] = "json",
        auth_scheme: AuthScheme | None = None,
        auth_credential: AuthCredential | None = None,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        allow_private_network_access: bool = False,
        ssl_verify: bool | str | ssl.SSLContext | None = None,
        header_provider: HeaderProvider | None = None,
        preserve_property_names: bool = False,
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        if spec_dict is None:
            if spec_str is None:
                raise ValueError("Pass spec_dict or spec_str.")
            spec_dict = _load_spec(spec_str, spec_str_type)
        operations = OpenApiSpecParser(preserve_property_names=preserve_property_names).parse(
            spec_dict
        )
        for operation in operations:
            if base_url is not None:
                operation.endpoint.base_url = base_url
            _check_base_url(operation.endpoint.base_url)
        self.client = RestApiClient(
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            allow_private_network_access=allow_private_network_access,
            ssl_verify=ssl_verify,
        )
        self._tools = [
            RestApiTool.from_parsed_operation(
                o, client=self.client, header_provider=header_provider
            )
            for o in _unique_names(operations)
        ]
        self._auth_scheme = auth_scheme
        self._auth_credential = auth_credential
        if auth_credential is not None:
            self._configure_auth(operations, auth_scheme, auth_credential)

    def _configure_auth(
        self,
        operations: list[ParsedOperation],
        auth_scheme: AuthScheme | None,
        auth_credential: AuthCredential,
    ) -> None:
        """Give the credential to the tools whose operations require its kind."""
        request_auth(auth_scheme, auth_credential)  # unusable: ValueError now, not at call time
        kind = "apiKey" if auth_credential.auth_type == AuthCredentialTypes.API_KEY else "bearer"
        declares_security = any(o.security_declared for o in operations)
        given = 0
        for tool, operation in zip(self._tools, operations, strict=True):
            if not declares_security or any(
                _answers(kind, scheme) for scheme in operation.security_schemes
            ):
                tool.configure_auth_scheme(auth_scheme)
                tool.configure_auth_credential(auth_credential)
                given += 1
        if not given:
            logger.warning("OpenAPIToolset: no operation requires the %s credential given", kind)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """One RestApiTool per operation, filtered by `tool_filter`."""
        return [t for t in self._tools if self._is_tool_selected(t, readonly_context)]

    def get_tool(self, tool_name: str) -> RestApiTool | None:
        """The tool named `tool_name` (ADK's name), or None."""
        return next((t for t in self._tools if t.name == tool_name), None)

    async def close(self) -> None:
        """Close the tools' HTTP client."""
        await self.client.close()


def _load_spec(spec_str: str, spec_str_type: str) -> JsonObject:
    if spec_str_type == "json":
        loaded = json.loads(spec_str)
    elif spec_str_type == "yaml":
        loaded = yaml.safe_load(spec_str)
    else:
        raise ValueError(f"Unsupported spec type: {spec_str_type}")
    if not isinstance(loaded, dict):
        raise ValueError("An OpenAPI document is an object.")
    return loaded


def _check_base_url(url: str) -> None:
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"Calls need an absolute http(s) server URL, not {url!r}: "
            "pass base_url= or give the document a `servers` entry."
        )


def _unique_names(operations: list[ParsedOperation]) -> list[ParsedOperation]:
    """The operations, a repeated tool name getting `_2`, `_3`, ... (the model tells by name)."""
    seen: dict[str, int] = {}
    for operation in operations:
        count = seen.get(operation.name, 0) + 1
        seen[operation.name] = count
        if count > 1:
            operation.name = f"{operation.name[:56]}_{count}"
    return operations


def _answers(kind: str, scheme: dict[str, Any]) -> bool:
    """Whether a credential of `kind` answers the security scheme object `scheme`."""
    scheme_type = scheme.get("type")
    if kind == "apiKey":
        return scheme_type == "apiKey"
    if scheme_type == "http":
        return str(scheme.get("scheme", "")).lower() == "bearer"
    return scheme_type in ("oauth2", "openIdConnect")
