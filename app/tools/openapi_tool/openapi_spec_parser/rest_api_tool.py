"""RestApiTool: one OpenAPI operation as a tool (ADK's `rest_api_tool`), and RestApiClient, the
HTTP side its calls share.

A call builds the request from the model's arguments (path parameters URL-encoded into the path,
query, header and cookie parameters, the JSON body from the body arguments), adds the configured
credential, and sends it with the toolset's one `httpx.AsyncClient`. Whatever goes wrong comes
back to the model as a function response `{"error": {"type": ..., ...}}`, never as an exception
that would stop the invocation:

- a non-2xx answer: `openapi-error-status`, with the `status` and the `body` (JSON, else text);
- a refused destination (not http(s), or a non-public address): `openapi-destination-refused`;
- a connection failure or the call's deadline (`timeout` seconds, the whole exchange):
  `openapi-request-failed`;
- an answer over `max_response_bytes` (read as a stream and dropped at the limit):
  `openapi-response-too-large`;
- a missing path argument: `openapi-invalid-arguments`.

A 2xx JSON object is the function response as it is; any other JSON value, or text, is wrapped as
`{"result": ...}`. Redirects are not followed (a 3xx is an error status), so the destination
check cannot be stepped around.

The destination check (ADK's SSRF protection): unless `allow_private_network_access`, the host is
resolved before each call and refused if any of its addresses is loopback, private, link-local,
shared, reserved, multicast or unspecified (not `is_global`); the request then goes to the
address that was checked (the Host header and TLS server name keep the host's name), so DNS
cannot answer differently between the check and the connection.
"""

import asyncio
import ipaddress
import json
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
from google.genai import types

from app.auth.auth_credential import AuthCredential
from app.auth.auth_schemes import AuthScheme
from app.contexts.readonly import ReadonlyContext
from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool
from app.tools.openapi_tool.auth.auth_helpers import RequestAuth, request_auth
from app.tools.openapi_tool.openapi_spec_parser.openapi_spec_parser import (
    ApiParameter,
    BodyKind,
    OperationEndpoint,
    ParsedOperation,
    is_json_media_type,
)

logger = logging.getLogger(__name__)

#: What a call's answer may weigh by default (1 MiB).
DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
#: How long one call may take by default, in seconds, from connecting to the last byte.
DEFAULT_TIMEOUT = 30.0

HeaderProvider = Callable[[ReadonlyContext], dict[str, str]]
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class _Refused(Exception):
    """The destination is not allowed."""


class _TooLarge(Exception):
    """The answer is over the limit."""


def _error(kind: str, title: str, **details: Any) -> dict[str, Any]:
    """A function response telling the model the call failed."""
    return {"error": {"type": kind, "title": title, **details}}


def _blocked(address: _Address) -> bool:
    """Whether `address` is anything but a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


class RestApiClient:
    """The HTTP side of a toolset's RestApiTools: one `httpx.AsyncClient` (opened at the first
    call, closed by `close()`), the destination check, the deadline and the size limit."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        allow_private_network_access: bool = False,
        ssl_verify: bool | str | ssl.SSLContext | None = None,
    ) -> None:
        if timeout <= 0 or max_response_bytes <= 0:
            raise ValueError("timeout and max_response_bytes must be positive.")
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.allow_private_network_access = allow_private_network_access
        self._ssl_verify = True if ssl_verify is None else ssl_verify
        self.http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self.http is None or self.http.is_closed:
            # Redirects stay off: following one would skip the destination check.
            self.http = httpx.AsyncClient(
                verify=self._ssl_verify, follow_redirects=False, timeout=self.timeout
            )
        return self.http

    async def close(self) -> None:
        """Close the HTTP client (a later call opens a new one)."""
        if self.http is not None:
            await self.http.aclose()
            self.http = None

    async def _addresses(self, url: httpx.URL) -> list[_Address]:
        """The checked addresses to connect to (empty: connect by name, as allowed)."""
        if url.scheme not in ("http", "https"):
            raise _Refused(f"only http and https URLs are called, not {url.scheme or '(none)'}")
        if not url.host:
            raise _Refused("the URL has no host")
        if self.allow_private_network_access:
            return []
        try:
            addresses: list[_Address] = [ipaddress.ip_address(url.host)]
        except ValueError:
            port = url.port or (443 if url.scheme == "https" else 80)
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    url.host, port, type=socket.SOCK_STREAM
                )
            except (OSError, UnicodeError) as error:
                raise httpx.ConnectError(f"cannot resolve {url.host}: {error}") from error
            addresses = list(
                dict.fromkeys(
                    ipaddress.ip_address(info[4][0])
                    for info in infos
                    if info[0] in (socket.AF_INET, socket.AF_INET6)
                )
            )
        if not addresses:
            raise httpx.ConnectError(f"cannot resolve {url.host}")
        # One private address is enough to refuse: the connection could pick it.
        if any(_blocked(a) for a in addresses):
            raise _Refused(
                f"{url.host} is a private, loopback, link-local or reserved address "
                "(allow_private_network_access=True allows it)"
            )
        return addresses

    async def request(self, method: str, url: str, **kwargs: Any) -> tuple[httpx.Response, bytes]:
        """Send one request within the deadline; the response and its body (at most the limit).

        Raises _Refused, _TooLarge, httpx.HTTPError or TimeoutError.
        """
        target = httpx.URL(url)
        async with asyncio.timeout(self.timeout):
            addresses = await self._addresses(target)
            if not addresses:
                return await self._send(self._client().build_request(method, target, **kwargs))
            headers = dict(kwargs.pop("headers", None) or {})
            headers["Host"] = target.netloc.decode("ascii")
            last_error: httpx.HTTPError | None = None
            for address in addresses:
                pinned = self._client().build_request(
                    method,
                    target.copy_with(host=str(address)),
                    headers=headers,
                    extensions={"sni_hostname": target.host},
                    **kwargs,
                )
                try:
                    return await self._send(pinned)
                except httpx.ConnectError as error:
                    last_error = error
            assert last_error is not None
            raise last_error

    async def _send(self, request: httpx.Request) -> tuple[httpx.Response, bytes]:
        response = await self._client().send(request, stream=True)
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_response_bytes:
                raise _TooLarge(response.status_code)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_response_bytes:
                    raise _TooLarge(response.status_code)
            return response, bytes(body)
        finally:
            await response.aclose()


def _as_text(value: Any) -> str:
    """A path, header or cookie value as text (JSON spelling for booleans and structures)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_as_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def _query_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    return _as_text(value)


def _decode(response: httpx.Response, body: bytes) -> Any:
    """The answer as JSON when it says so (or says nothing), else as text."""
    text = body.decode(response.encoding or "utf-8", errors="replace")
    content_type = response.headers.get("content-type", "")
    if not text.strip():
        return None
    if not content_type or "json" in content_type.lower():
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


class RestApiTool(BaseTool):
    """One OpenAPI operation as a tool (ADK's name).

    Built by OpenAPIToolset (`from_parsed_operation`); `auth_scheme` and `auth_credential` are
    the credential it sends (API key or bearer token, see `auth_helpers.request_auth`).
    """

    def __init__(
        self,
        name: str,
        description: str,
        endpoint: OperationEndpoint,
        parsed: ParsedOperation,
        auth_scheme: AuthScheme | None = None,
        auth_credential: AuthCredential | None = None,
        *,
        client: RestApiClient | None = None,
        header_provider: HeaderProvider | None = None,
    ) -> None:
        super().__init__(name=name, description=description)
        self.endpoint = endpoint
        self.parsed = parsed
        self.operation = parsed.operation
        self.client = client or RestApiClient()
        self._header_provider = header_provider
        self.auth_scheme: AuthScheme | None = None
        self.auth_credential: AuthCredential | None = None
        self._auth = RequestAuth()
        self.configure_auth_scheme(auth_scheme)
        self.configure_auth_credential(auth_credential)

    @classmethod
    def from_parsed_operation(
        cls,
        parsed: ParsedOperation,
        *,
        client: RestApiClient | None = None,
        header_provider: HeaderProvider | None = None,
    ) -> "RestApiTool":
        """The tool for one parsed operation (ADK's constructor)."""
        return cls(
            name=parsed.name,
            description=parsed.description,
            endpoint=parsed.endpoint,
            parsed=parsed,
            client=client,
            header_provider=header_provider,
        )

    def configure_auth_scheme(self, auth_scheme: AuthScheme | None) -> None:
        """Set the scheme the credential is sent by (ADK's name)."""
        self.auth_scheme = auth_scheme
        self._prepare_auth()

    def configure_auth_credential(self, auth_credential: AuthCredential | None = None) -> None:
        """Set the credential sent with every call (ADK's name)."""
        self.auth_credential = auth_credential
        self._prepare_auth()

    def _prepare_auth(self) -> None:
        # Checked when configured, so an unusable credential fails when the app loads.
        if self.auth_credential is None:
            self._auth = RequestAuth()
        else:
            self._auth = request_auth(self.auth_scheme, self.auth_credential)

    def get_declaration(self) -> types.FunctionDeclaration:
        """The operation's arguments as JSON schema; its description from the document."""
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=self.parsed.json_schema(),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Call the operation with the model's arguments."""
        return await self.call(args=args, tool_context=tool_context)

    async def call(
        self, *, args: dict[str, Any], tool_context: ToolContext | None = None
    ) -> dict[str, Any]:
        """Send the request; the answer, or an error result (ADK's name)."""
        args = self._with_defaults(args)
        missing = [
            p.py_name
            for p in self.parsed.parameters
            if p.param_location == "path" and args.get(p.py_name) is None
        ]
        if missing:
            return _error(
                "openapi-invalid-arguments",
                "Required path arguments are missing.",
                missing=missing,
            )
        method = self.endpoint.method.upper()
        url, request = self._request(args)
        if self._header_provider is not None and tool_context is not None:
            request["headers"].update(self._header_provider(tool_context))
        try:
            response, body = await self.client.request(method, url, **request)
        except _Refused as refused:
            return _error(
                "openapi-destination-refused",
                "The API's address is not allowed.",
                detail=str(refused),
            )
        except _TooLarge as too_large:
            return _error(
                "openapi-response-too-large",
                "The API's answer is over the size limit.",
                status=too_large.args[0],
                limit=self.client.max_response_bytes,
            )
        except (httpx.HTTPError, httpx.InvalidURL, TimeoutError) as error:
            detail = (
                f"no answer within {self.client.timeout} s"
                if isinstance(error, TimeoutError | httpx.TimeoutException)
                else f"{type(error).__name__}: {error}"
            )
            logger.info("OpenAPI tool %s: %s %s failed: %s", self.name, method, url, detail)
            return _error("openapi-request-failed", "The API could not be reached.", detail=detail)
        answer = _decode(response, body)
        if not response.is_success:
            return _error(
                "openapi-error-status",
                f"The API answered {response.status_code}.",
                status=response.status_code,
                body=answer,
            )
        return answer if isinstance(answer, dict) else {"result": answer}

    def _with_defaults(self, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments, with the defaults of required ones the model left out (ADK's rule)."""
        filled = dict(args)
        for param in self.parsed.parameters:
            if param.py_name not in filled and param.required and "default" in param.param_schema:
                filled[param.py_name] = param.param_schema["default"]
        return filled

    def _request(self, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The URL and the httpx request arguments for `args`."""
        path = self.endpoint.path
        query: dict[str, Any] = {}
        headers: dict[str, str] = {"User-Agent": f"agentd (tool: {self.name})"}
        cookies: dict[str, str] = {}
        body_params: list[ApiParameter] = []
        for param in self.parsed.parameters:
            if param.param_location == "body":
                body_params.append(param)
                continue
            value = args.get(param.py_name)
            if value is None:
                continue
            if param.param_location == "path":
                # Every reserved character encoded, `/` too: a value is one path segment.
                path = path.replace(f"{{{param.original_name}}}", quote(_as_text(value), safe=""))
            elif param.param_location == "query":
                query[param.original_name] = _query_value(value)
            elif param.param_location == "header":
                headers[param.original_name] = _as_text(value)
            else:
                cookies[param.original_name] = _as_text(value)
        headers.update(self._auth.headers)
        query.update(self._auth.query)
        cookies.update(self._auth.cookies)
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        url = f"{self.endpoint.base_url.rstrip('/')}{path}"
        # httpx replaces a URL's query with `params`: keep a query the server URL carries.
        embedded = httpx.URL(url).params
        request: dict[str, Any] = {
            "params": embedded.merge(query) if embedded else query,
            "headers": headers,
        }
        body = self._body(body_params, args)
        if "content" in body:
            headers["Content-Type"] = self.parsed.body_media_type or "application/octet-stream"
        request.update(body)
        return url, request

    def _body(self, body_params: list[ApiParameter], args: dict[str, Any]) -> dict[str, Any]:
        """The httpx body arguments: `json`, `data` or `content` with its Content-Type."""
        kind: BodyKind | None = self.parsed.body_kind
        media_type = self.parsed.body_media_type or "application/json"
        if kind is None:
            return {}
        value: Any
        if kind == "object":
            value = {p.original_name: args[p.py_name] for p in body_params if p.py_name in args}
            if not value and not self.parsed.body_required:
                return {}
        else:
            value = args.get(body_params[0].py_name) if body_params else None
            if value is None:
                return {}
        if is_json_media_type(media_type):
            return {"json": value}
        if media_type.startswith("application/x-www-form-urlencoded") and isinstance(value, dict):
            return {"data": {k: _as_text(v) for k, v in value.items()}}
        content = value if isinstance(value, str) else json.dumps(value)
        return {"content": content.encode()}
