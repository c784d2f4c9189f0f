"""An OpenAPI document as a list of operations, each ready to be one tool (ADK's
`openapi_spec_parser`).

What a tool needs from an operation: its name (the operationId in snake_case, as ADK names it;
from the path and method when there is none), its description (the operation's description, else
its summary), its endpoint (base URL, path, method), and its arguments: the path, query, header
and cookie parameters (path-level ones merged under the operation's own) and, for an object JSON
body, each body property as a top-level argument, as ADK does (an array body is the `array`
argument, any other body the `body` argument). Argument names are snake_case too, Python keywords
get a `param_` prefix and a repeated name a `_0`, `_1` suffix; each keeps the name and place it
has in the request. Local `$ref`s (`#/components/...`) are resolved first; a reference to itself
(a tree, a linked list) stops at an open object.
"""

import copy
import keyword
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

JsonObject = dict[str, Any]
ParamLocation = Literal["path", "query", "header", "cookie", "body"]
BodyKind = Literal["object", "array", "value"]

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_DEFAULT_NAMES = {
    "path": "path_param",
    "query": "query_param",
    "header": "header_param",
    "cookie": "cookie_param",
    "body": "body",
}
#: Gemini caps function names at 64 characters; ADK cuts them at 60.
MAX_NAME_LENGTH = 60


def to_snake_case(text: str) -> str:
    """`getPetById`, `GetPetByID`, `get-pet by id` -> `get_pet_by_id` (ADK's naming)."""
    words = re.sub(r"[^A-Za-z0-9]+", "_", text)
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", words)
    words = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", words)
    return re.sub(r"_+", "_", words).strip("_").lower()


def function_name(text: str) -> str:
    """A valid function name for a model: snake_case, a letter or `_` first, 60 characters."""
    name = to_snake_case(text) or "operation"
    if name[0].isdigit():
        name = f"op_{name}"
    return name[:MAX_NAME_LENGTH]


class OperationEndpoint(BaseModel):
    """Where an operation is sent (ADK's model)."""

    base_url: str
    path: str
    method: str


@dataclass
class ApiParameter:
    """One argument of a tool and where its value goes in the request (ADK's name)."""

    original_name: str
    param_location: ParamLocation
    param_schema: JsonObject
    py_name: str
    required: bool = False
    description: str = ""

    def json_schema(self) -> JsonObject:
        """The argument's JSON schema, with its description."""
        schema = copy.deepcopy(self.param_schema)
        if self.description and not schema.get("description"):
            schema["description"] = self.description
        return schema


@dataclass
class ParsedOperation:
    """One operation of the document, resolved (ADK's name).

    `security_schemes` are the scheme objects the operation's security requirement names (its
    own `security`, else the document's); empty when it needs none. `security_declared` says
    whether there was a requirement at all (`security: []` is one: "none").
    """

    name: str
    description: str
    endpoint: OperationEndpoint
    operation: JsonObject
    parameters: list[ApiParameter]
    body_kind: BodyKind | None = None
    body_media_type: str | None = None
    body_required: bool = False
    security_schemes: list[JsonObject] = field(default_factory=list)
    security_declared: bool = False

    def json_schema(self) -> JsonObject:
        """The tool's arguments as one JSON schema object."""
        return {
            "type": "object",
            "properties": {p.py_name: p.json_schema() for p in self.parameters},
            "required": [p.py_name for p in self.parameters if p.required],
        }


class OpenApiSpecParser:
    """Turns an OpenAPI 3 document into ParsedOperations (ADK's name)."""

    def __init__(self, *, preserve_property_names: bool = False) -> None:
        self._preserve_property_names = preserve_property_names

    def parse(self, openapi_spec_dict: JsonObject) -> list[ParsedOperation]:
        """Every operation of the document, in document order."""
        if not isinstance(openapi_spec_dict, dict) or not isinstance(
            openapi_spec_dict.get("paths"), dict
        ):
            raise ValueError("An OpenAPI document is an object with `paths`.")
        spec = resolve_references(openapi_spec_dict)
        base_url = server_url(spec)
        schemes: JsonObject = (spec.get("components") or {}).get("securitySchemes") or {}
        global_security = spec.get("security")
        operations: list[ParsedOperation] = []
        for path, path_item in spec["paths"].items():
            if not isinstance(path_item, dict):
                continue
            for method in _METHODS:
                operation = path_item.get(method)
                if not isinstance(operation, dict):
                    continue
                operations.append(
                    self._parse_operation(
                        operation=operation,
                        path_parameters=path_item.get("parameters") or [],
                        endpoint=OperationEndpoint(base_url=base_url, path=path, method=method),
                        security=operation.get("security", global_security),
                        schemes=schemes,
                    )
                )
        return operations

    def _parse_operation(
        self,
        *,
        operation: JsonObject,
        path_parameters: list[JsonObject],
        endpoint: OperationEndpoint,
        security: list[JsonObject] | None,
        schemes: JsonObject,
    ) -> ParsedOperation:
        operation_id = operation.get("operationId") or f"{endpoint.path}_{endpoint.method}"
        parameters: list[ApiParameter] = []
        for param in _merge_parameters(operation.get("parameters") or [], path_parameters):
            location = param.get("in")
            if location not in ("path", "query", "header", "cookie"):
                continue
            schema = param.get("schema")
            parameters.append(
                ApiParameter(
                    original_name=str(param.get("name", "")),
                    param_location=location,
                    param_schema=dict(schema) if isinstance(schema, dict) else {},
                    py_name=self._py_name(str(param.get("name", "")), location),
                    # Path parameters are always required (OpenAPI says so even when unsaid).
                    required=bool(param.get("required")) or location == "path",
                    description=str(param.get("description") or ""),
                )
            )
        body_kind, media_type, body_required = self._add_body(operation, parameters)
        _dedupe(parameters)
        requirement_names = [name for req in security or [] for name in req]
        return ParsedOperation(
            name=function_name(str(operation_id)),
            description=str(operation.get("description") or operation.get("summary") or ""),
            endpoint=endpoint,
            operation=operation,
            parameters=parameters,
            body_kind=body_kind,
            body_media_type=media_type,
            body_required=body_required,
            security_schemes=[
                schemes[name] for name in requirement_names if isinstance(schemes.get(name), dict)
            ],
            security_declared=security is not None,
        )

    def _add_body(
        self, operation: JsonObject, parameters: list[ApiParameter]
    ) -> tuple[BodyKind | None, str | None, bool]:
        """Append the request body's arguments; its kind, media type and whether required."""
        body = operation.get("requestBody")
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(content, dict) or not content:
            return None, None, False
        # JSON first (what the tools send best), else the first media type, as ADK.
        media_type = next((m for m in content if is_json_media_type(m)), next(iter(content)))
        media = content[media_type] if isinstance(content[media_type], dict) else {}
        found = media.get("schema")
        schema: JsonObject = found if isinstance(found, dict) else {}
        description = str(body.get("description") or "")
        body_required = bool(body.get("required"))
        if schema.get("type") == "object" or "properties" in schema:
            required = set(schema.get("required") or [])
            for name, prop in (schema.get("properties") or {}).items():
                prop_schema = prop if isinstance(prop, dict) else {}
                parameters.append(
                    ApiParameter(
                        original_name=name,
                        param_location="body",
                        param_schema=dict(prop_schema),
                        py_name=self._py_name(name, "body"),
                        required=name in required,
                        description=str(prop_schema.get("description") or ""),
                    )
                )
            return "object", media_type, body_required
        kind: BodyKind = "array" if schema.get("type") == "array" else "value"
        parameters.append(
            ApiParameter(
                original_name="array" if kind == "array" else "body",
                param_location="body",
                param_schema=dict(schema),
                py_name=kind if kind == "array" else "body",
                required=body_required,
                description=description,
            )
        )
        return kind, media_type, body_required

    def _py_name(self, original: str, location: ParamLocation) -> str:
        name = original if self._preserve_property_names else to_snake_case(original)
        if keyword.iskeyword(name):
            name = f"param_{name}"
        return name or _DEFAULT_NAMES[location]


def is_json_media_type(media_type: str) -> bool:
    """Whether `media_type` is JSON (`application/json`, `application/problem+json`, ...)."""
    base = media_type.split(";", 1)[0].strip().lower()
    return base == "application/json" or base.endswith("+json")


def _merge_parameters(
    operation_parameters: list[JsonObject], path_parameters: list[JsonObject]
) -> list[JsonObject]:
    """The operation's parameters, then the path-level ones it does not redeclare."""
    merged = [p for p in operation_parameters if isinstance(p, dict)]
    taken = {(p.get("name"), p.get("in")) for p in merged}
    merged.extend(
        p
        for p in path_parameters
        if isinstance(p, dict) and (p.get("name"), p.get("in")) not in taken
    )
    return merged


def _dedupe(parameters: list[ApiParameter]) -> None:
    """A repeated argument name gets `_0`, `_1`, ... (ADK's rule)."""
    repeats: dict[str, int] = {}
    for param in parameters:
        name = param.py_name
        if name in repeats:
            param.py_name = f"{name}_{repeats[name]}"
            repeats[name] += 1
        else:
            repeats[name] = 0


def server_url(spec: JsonObject) -> str:
    """The first server's URL, its variables set to their defaults ("" without servers)."""
    servers = spec.get("servers")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return ""
    url = str(servers[0].get("url") or "")
    for name, variable in (servers[0].get("variables") or {}).items():
        if isinstance(variable, dict) and "default" in variable:
            url = url.replace(f"{{{name}}}", str(variable["default"]))
    return url


def resolve_references(spec: JsonObject) -> JsonObject:
    """A copy of `spec` whose `paths` have every local `$ref` replaced by what it points at.

    A reference met again inside its own expansion becomes an open object (its siblings kept),
    so recursive schemas end instead of looping; an expansion that met no such cycle is reused
    wherever the reference appears again (large documents share schemas widely). External
    references are an error.
    """
    cache: dict[str, Any] = {}
    cuts = 0

    def lookup(ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"Only local references are supported: {ref}")
        node: Any = spec
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or token not in node:
                raise ValueError(f"Unresolvable reference: {ref}")
            node = node[token]
        return node

    def resolve(node: Any, expanding: tuple[str, ...]) -> Any:
        nonlocal cuts
        if isinstance(node, list):
            return [resolve(item, expanding) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        siblings = {k: resolve(v, expanding) for k, v in node.items() if k != "$ref"}
        if not isinstance(ref, str):
            return siblings
        if ref in expanding:
            cuts += 1
            return {"type": "object", **siblings}
        if ref in cache:
            target = cache[ref]
        else:
            cuts_before = cuts
            target = resolve(lookup(ref), (*expanding, ref))
            if cuts == cuts_before:
                cache[ref] = target
        if isinstance(target, dict):
            return {**target, **siblings}
        return target

    resolved = dict(spec)
    resolved["paths"] = resolve(spec.get("paths") or {}, ())
    return copy.deepcopy(resolved)
