"""JSON Schema out of google-genai declarations, for providers that take plain JSON Schema.

Our tools declare themselves as `types.FunctionDeclaration`s (a `types.Schema` in `parameters`,
or JSON Schema in `parameters_json_schema`), and `output_schema` becomes the config's
`response_schema` (a pydantic model, a type, or a `types.Schema`). OpenAI and Anthropic take JSON
Schema: these functions give it, the same way for both backends.
"""

from typing import Any

from google.genai import types
from pydantic import BaseModel, TypeAdapter

_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def function_declarations(config: types.GenerateContentConfig) -> list[types.FunctionDeclaration]:
    """Every function declared in the request's tools, in order."""
    found: list[types.FunctionDeclaration] = []
    for tool in config.tools or []:
        if isinstance(tool, types.Tool) and tool.function_declarations:
            found.extend(tool.function_declarations)
    return found


def parameters_json_schema(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    """The declaration's parameters as a JSON Schema object (an empty object when it has none)."""
    if declaration.parameters_json_schema is not None:
        schema = declaration.parameters_json_schema
        return dict(schema) if isinstance(schema, dict) else _EMPTY_OBJECT.copy()
    if declaration.parameters is not None:
        return schema_to_json(declaration.parameters)
    return _EMPTY_OBJECT.copy()


def response_json_schema(config: types.GenerateContentConfig) -> dict[str, Any] | None:
    """The JSON Schema the answer must match (`response_json_schema` or `response_schema`)."""
    if config.response_json_schema is not None:
        schema = config.response_json_schema
        return dict(schema) if isinstance(schema, dict) else None
    schema = config.response_schema
    if schema is None:
        return None
    if isinstance(schema, types.Schema):
        return schema_to_json(schema)
    if isinstance(schema, dict):
        return dict(schema)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    return adapter.json_schema()


def schema_to_json(schema: types.Schema) -> dict[str, Any]:
    """A google-genai Schema as JSON Schema (types lower-cased, nullable as a null type)."""
    out: dict[str, Any] = {}
    if schema.type is not None and schema.type != types.Type.TYPE_UNSPECIFIED:
        kind = schema.type.value.lower()
        out["type"] = [kind, "null"] if schema.nullable else kind
    if schema.description:
        out["description"] = schema.description
    if schema.enum:
        out["enum"] = list(schema.enum)
    if schema.format:
        out["format"] = schema.format
    if schema.properties:
        out["properties"] = {k: schema_to_json(v) for k, v in schema.properties.items()}
    if schema.required:
        out["required"] = list(schema.required)
    if schema.items is not None:
        out["items"] = schema_to_json(schema.items)
    if schema.any_of:
        out["anyOf"] = [schema_to_json(s) for s in schema.any_of]
        if schema.nullable:
            out["anyOf"].append({"type": "null"})
    for source, target in (
        ("minimum", "minimum"),
        ("maximum", "maximum"),
        ("min_items", "minItems"),
        ("max_items", "maxItems"),
        ("min_length", "minLength"),
        ("max_length", "maxLength"),
        ("pattern", "pattern"),
        ("default", "default"),
    ):
        value = getattr(schema, source, None)
        if value is not None:
            out[target] = value
    if out.get("type") == "object" and "properties" not in out:
        out["properties"] = {}
    return out
