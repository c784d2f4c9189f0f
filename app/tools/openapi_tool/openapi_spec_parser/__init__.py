"""OpenAPI documents as tools (ADK's `openapi_tool.openapi_spec_parser`)."""

from app.tools.openapi_tool.openapi_spec_parser.openapi_spec_parser import (
    ApiParameter,
    OpenApiSpecParser,
    OperationEndpoint,
    ParsedOperation,
)
from app.tools.openapi_tool.openapi_spec_parser.openapi_toolset import OpenAPIToolset
from app.tools.openapi_tool.openapi_spec_parser.rest_api_tool import RestApiClient, RestApiTool

__all__ = [
    "ApiParameter",
    "OpenAPIToolset",
    "OpenApiSpecParser",
    "OperationEndpoint",
    "ParsedOperation",
    "RestApiClient",
    "RestApiTool",
]
