"""Credentials for OpenAPI tools (ADK's `google.adk.tools.openapi_tool.auth`)."""

from app.tools.openapi_tool.auth import auth_helpers

__all__ = ["auth_helpers"]
