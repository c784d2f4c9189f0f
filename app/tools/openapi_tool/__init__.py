"""OpenAPI tools at ADK's path (`google.adk.tools.openapi_tool`): OpenAPIToolset turns an
OpenAPI document into one RestApiTool per operation."""

from app.tools.openapi_tool.openapi_spec_parser import OpenAPIToolset, RestApiTool

__all__ = ["OpenAPIToolset", "RestApiTool"]
