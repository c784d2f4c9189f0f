"""OpenAPIToolset (issue 20) against a real service: a FastAPI app in its own uvicorn process,
described by its own /openapi.json, called over HTTP by an LlmAgent's tools.

What the server received comes from its request log (`/_received`); what the model saw is the
function responses in the scripted model's next request.
"""

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import yaml

from app.agents import LlmAgent
from app.auth import AuthCredential, AuthCredentialTypes, HttpAuth, HttpCredentials
from app.auth.auth_credential import ServiceAccount
from app.auth.auth_schemes import APIKey, APIKeyIn, HTTPBearer
from app.runners import InMemoryRunner
from app.tools.openapi_tool import OpenAPIToolset, RestApiTool
from app.tools.openapi_tool.auth.auth_helpers import (
    service_account_scheme_credential,
    token_to_scheme_credential,
)
from app.tools.openapi_tool.openapi_spec_parser import rest_api_tool
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response, texts
from tests.live_server import PROJECT_ROOT, free_port
from tests.tools.openapi_target import API_KEY, BIG_BYTES

STARTUP_SECONDS = 20
MIB = 1024 * 1024


@dataclass
class Target:
    """The running service: its URL and its own OpenAPI document (JSON text)."""

    url: str
    spec: str

    async def received(self) -> list[dict[str, Any]]:
        """Every request the service got since the last `forget`."""
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"{self.url}/_received")
            got: list[dict[str, Any]] = answer.json()
            return got

    def forget(self) -> None:
        """Clear the service's request log."""
        httpx.delete(f"{self.url}/_received").raise_for_status()


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The FastAPI service under uvicorn on 127.0.0.1, one process for this module."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("openapi-target") / "uvicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "tests.tools.openapi_target:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--timeout-graceful-shutdown",
                "0",  # /slow may still be sleeping
            ],
            cwd=PROJECT_ROOT,
            env={**os.environ, "TARGET_URL": url},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                spec = httpx.get(f"{url}/openapi.json", timeout=1)
                if spec.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the target did not start: {log.read_text()}")
            time.sleep(0.05)
        yield Target(url=url, spec=spec.text)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
async def toolset(target: Target) -> AsyncIterator[OpenAPIToolset]:
    """The service's tools with its API key, private addresses allowed (it is on 127.0.0.1)."""
    target.forget()
    scheme, credential = token_to_scheme_credential("apikey", "header", "X-API-Key", API_KEY)
    tools = OpenAPIToolset(
        spec_str=target.spec,
        spec_str_type="json",
        auth_scheme=scheme,
        auth_credential=credential,
        allow_private_network_access=True,
        header_provider=lambda context: {"X-User": context.user_id},
    )
    yield tools
    await tools.close()


async def drive(
    toolset: OpenAPIToolset, *calls: tuple[str, dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """Run one turn in which the model calls `calls`; the function responses the model saw."""
    model = ScriptModel(replies=[calls_response(*calls), text_response("done")])
    runner = InMemoryRunner(LlmAgent(name="a", model=model, tools=[toolset]), app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(runner, "go")
    assert texts(events)[-1] == "done"  # an error result does not stop the invocation
    assert len(model.requests) == 2
    return [
        (part.function_response.name or "", part.function_response.response or {})
        for content in model.requests[1].contents
        for part in content.parts or []
        if part.function_response is not None
    ]


def tool(toolset: OpenAPIToolset, name: str) -> RestApiTool:
    found = toolset.get_tool(name)
    assert found is not None
    return found


async def test_declarations_come_from_the_apps_own_openapi_document(
    toolset: OpenAPIToolset,
) -> None:
    tools = await toolset.get_tools()
    names = [t.name for t in tools]
    assert names == [
        "get_pet",
        "list_pets",
        "create_pet",
        "read_secret",
        "get_note",
        "get_big",
        "get_slow",
    ]

    get_pet = tool(toolset, "get_pet").get_declaration()
    assert get_pet.description == "Returns the pet with this id."
    schema = get_pet.parameters_json_schema
    assert isinstance(schema, dict)
    assert schema["required"] == ["pet_id"]
    assert schema["properties"]["pet_id"]["type"] == "integer"
    assert schema["properties"]["pet_id"]["description"] == "The pet's id."

    # The JSON body's properties are arguments of their own ($ref to PetIn resolved).
    create = tool(toolset, "create_pet").get_declaration()
    assert create.description == "Create a pet"  # no description: the summary
    body = create.parameters_json_schema
    assert isinstance(body, dict)
    assert list(body["properties"]) == ["name", "species", "tags"]
    assert body["required"] == ["name"]
    assert body["properties"]["name"]["description"] == "What the pet is called."
    assert body["properties"]["tags"]["type"] == "array"

    listing = tool(toolset, "list_pets").get_declaration().parameters_json_schema
    assert isinstance(listing, dict)
    assert list(listing["properties"]) == ["species", "limit"]
    assert listing["required"] == []
    # The credential is the toolset's: the model is never asked for the key.
    secret = tool(toolset, "read_secret").get_declaration().parameters_json_schema
    assert secret == {"type": "object", "properties": {}, "required": []}


async def test_a_get_with_a_path_parameter_and_query_parameters(
    toolset: OpenAPIToolset, target: Target
) -> None:
    seen = await drive(toolset, ("get_pet", {"pet_id": 1}), ("list_pets", {"species": "dog"}))

    assert seen == [
        ("get_pet", {"id": 1, "name": "Rex", "species": "dog", "tags": []}),
        ("list_pets", {"result": [{"id": 1, "name": "Rex", "species": "dog", "tags": []}]}),
    ]
    got = sorted((r["method"], r["raw_path"], r["query"]) for r in await target.received())
    assert got == [("GET", "/pets", "species=dog"), ("GET", "/pets/1", "")]


async def test_a_post_sends_the_body_arguments_as_one_json_object(
    toolset: OpenAPIToolset, target: Target
) -> None:
    seen = await drive(
        toolset, ("create_pet", {"name": "Tom", "species": "cat", "tags": ["black"]})
    )

    [(name, answer)] = seen
    assert name == "create_pet"
    assert answer["name"] == "Tom"
    assert answer["tags"] == ["black"]
    assert isinstance(answer["id"], int)
    [request] = await target.received()
    assert (request["method"], request["raw_path"]) == ("POST", "/pets")
    assert request["headers"]["content-type"] == "application/json"
    assert httpx.Response(200, content=request["body"]).json() == {
        "name": "Tom",
        "species": "cat",
        "tags": ["black"],
    }


async def test_the_api_key_reaches_only_the_operation_that_requires_it(
    toolset: OpenAPIToolset, target: Target
) -> None:
    seen = await drive(toolset, ("read_secret", {}), ("get_pet", {"pet_id": 1}))

    assert seen[0] == ("read_secret", {"secret": "swordfish"})
    by_path = {r["raw_path"]: r["headers"] for r in await target.received()}
    assert by_path["/secret"]["x-api-key"] == API_KEY
    assert "x-api-key" not in by_path["/pets/1"]
    assert by_path["/secret"]["user-agent"] == "agentd (tool: read_secret)"
    assert by_path["/pets/1"]["x-user"] == "u"  # header_provider, from the calling context


async def test_without_the_credential_the_protected_operation_is_an_error_result(
    target: Target,
) -> None:
    target.forget()
    toolset = OpenAPIToolset(spec_str=target.spec, allow_private_network_access=True)
    try:
        [(_, answer)] = await drive(toolset, ("read_secret", {}))
    finally:
        await toolset.close()

    assert answer == {
        "error": {
            "type": "openapi-error-status",
            "title": "The API answered 401.",
            "status": 401,
            "body": {"detail": "a valid X-API-Key is required"},
        }
    }
    [request] = await target.received()
    assert "x-api-key" not in request["headers"]


async def test_a_404_reaches_the_model_as_an_error_result_with_status_and_body(
    toolset: OpenAPIToolset,
) -> None:
    [(name, answer)] = await drive(toolset, ("get_pet", {"pet_id": 99}))

    assert name == "get_pet"
    assert answer["error"]["type"] == "openapi-error-status"
    assert answer["error"]["status"] == 404
    assert answer["error"]["body"] == {"detail": "no pet 99"}


async def test_path_values_are_url_encoded(toolset: OpenAPIToolset, target: Target) -> None:
    answer = await tool(toolset, "get_note").call(args={"title": "a b&c?d#e"})

    assert answer == {"title": "a b&c?d#e"}
    [request] = await target.received()
    assert request["raw_path"] == "/notes/a%20b%26c%3Fd%23e"
    assert request["query"] == ""


async def test_a_missing_path_argument_is_an_error_result_and_nothing_is_sent(
    toolset: OpenAPIToolset, target: Target
) -> None:
    answer = await tool(toolset, "get_pet").call(args={})

    assert answer["error"]["type"] == "openapi-invalid-arguments"
    assert answer["error"]["missing"] == ["pet_id"]
    assert await target.received() == []


async def test_a_yaml_document_gives_the_same_tools(target: Target) -> None:
    as_yaml = yaml.safe_dump(httpx.Response(200, content=target.spec).json(), sort_keys=False)
    toolset = OpenAPIToolset(
        spec_str=as_yaml, spec_str_type="yaml", allow_private_network_access=True
    )
    try:
        assert [t.name for t in await toolset.get_tools()][:3] == [
            "get_pet",
            "list_pets",
            "create_pet",
        ]
        assert await tool(toolset, "get_pet").call(args={"pet_id": 1}) == {
            "id": 1,
            "name": "Rex",
            "species": "dog",
            "tags": [],
        }
    finally:
        await toolset.close()


HAND_WRITTEN = """
openapi: 3.0.3
info: {title: pets, version: "1"}
servers:
  - url: https://pets.example.invalid/v1
security:
  - bearer: []
paths:
  /pets/{petId}:
    parameters:
      - {name: petId, in: path, required: true, schema: {type: integer}}
    get:
      operationId: getPetByID
      summary: Get a pet by id.
      parameters:
        - {name: X-Trace-Id, in: header, schema: {type: string}}
  /pets?species=dog:
    get:
      operationId: listDogs
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
  /trees:
    post:
      operationId: plant-tree
      description: Plant a tree of nodes.
      security: []
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Tree"}
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
  schemas:
    Node:
      type: object
      description: A node and its children.
      properties:
        label: {type: string}
        children: {type: array, items: {$ref: "#/components/schemas/Node"}}
    Tree:
      type: object
      required: [root]
      properties:
        root: {$ref: "#/components/schemas/Node"}
        class: {type: string}
"""


async def test_a_hand_written_document_with_refs_global_security_and_a_base_url(
    target: Target,
) -> None:
    target.forget()
    scheme, credential = token_to_scheme_credential("oauth2Token", credential_value="t-1")
    toolset = OpenAPIToolset(
        spec_str=HAND_WRITTEN,
        spec_str_type="yaml",
        auth_scheme=scheme,
        auth_credential=credential,
        base_url=target.url,  # instead of the document's server
        allow_private_network_access=True,
    )
    try:
        assert [t.name for t in await toolset.get_tools()] == [
            "get_pet_by_id",
            "list_dogs",
            "plant_tree",
        ]
        get_pet = tool(toolset, "get_pet_by_id").get_declaration().parameters_json_schema
        assert isinstance(get_pet, dict)
        assert list(get_pet["properties"]) == ["x_trace_id", "pet_id"]
        assert get_pet["required"] == ["pet_id"]
        plant = tool(toolset, "plant_tree").get_declaration()
        assert plant.description == "Plant a tree of nodes."
        tree = plant.parameters_json_schema
        assert isinstance(tree, dict)
        assert list(tree["properties"]) == ["root", "param_class"]  # a keyword renamed
        assert tree["required"] == ["root"]
        children = tree["properties"]["root"]["properties"]["children"]
        assert children["items"]["type"] == "object"  # the recursion stops at an open object

        answer = await tool(toolset, "get_pet_by_id").call(args={"pet_id": 1, "x_trace_id": "tr-9"})
        assert answer["name"] == "Rex"
        planted = await tool(toolset, "plant_tree").call(
            args={"root": {"label": "r"}, "param_class": "oak"}
        )
        assert planted == {"root": {"label": "r"}, "class": "oak"}
        # A query written into the path is kept beside the arguments'.
        dogs = await tool(toolset, "list_dogs").call(args={"limit": 1})
        assert [d["name"] for d in dogs["result"]] == ["Rex"]
    finally:
        await toolset.close()

    first, second, third = await target.received()
    assert first["raw_path"] == "/pets/1"
    assert first["headers"]["authorization"] == "Bearer t-1"  # the document's global security
    assert first["headers"]["x-trace-id"] == "tr-9"
    assert second["raw_path"] == "/trees"
    assert "authorization" not in second["headers"]  # `security: []` needs none
    assert httpx.Response(200, content=second["body"]).json() == {
        "root": {"label": "r"},
        "class": "oak",
    }
    assert (third["raw_path"], third["query"]) == ("/pets", "species=dog&limit=1")


async def test_a_document_without_security_gets_the_credential_on_every_operation(
    target: Target,
) -> None:
    target.forget()
    bare = {
        "openapi": "3.0.3",
        "info": {"title": "bare", "version": "1"},
        "servers": [{"url": target.url}],
        "paths": {"/pets": {"get": {"operationId": "listPets"}}},
    }
    scheme, credential = token_to_scheme_credential("apikey", "query", "key", "q-1")
    toolset = OpenAPIToolset(
        spec_dict=bare,
        auth_scheme=scheme,
        auth_credential=credential,
        allow_private_network_access=True,
    )
    try:
        await tool(toolset, "list_pets").call(args={})
    finally:
        await toolset.close()

    [request] = await target.received()
    assert request["query"] == "key=q-1"


async def test_private_and_loopback_addresses_are_refused_unless_allowed(
    target: Target,
) -> None:
    target.forget()
    port = target.url.rsplit(":", 1)[1]
    for base_url in (
        target.url,
        f"http://localhost:{port}",
        f"http://[::1]:{port}",
        "http://10.0.0.7",
        "http://169.254.169.254",
        "http://[::ffff:127.0.0.1]",
    ):
        toolset = OpenAPIToolset(spec_str=target.spec, base_url=base_url)
        try:
            if base_url == target.url:
                [(_, answer)] = await drive(toolset, ("get_pet", {"pet_id": 1}))
            else:
                answer = await tool(toolset, "get_pet").call(args={"pet_id": 1})
        finally:
            await toolset.close()
        assert answer["error"]["type"] == "openapi-destination-refused", base_url
    assert await target.received() == []


async def test_the_call_goes_to_the_address_that_was_checked(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is resolved once, checked, and the connection pinned to that address (the name
    itself resolves nowhere here), so DNS cannot answer differently in between."""
    target.forget()
    port = int(target.url.rsplit(":", 1)[1])
    answers = [["127.0.0.1"], ["127.0.0.1", "10.0.0.7"]]

    async def resolve(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        del args, kwargs
        assert host == "pets.test"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers.pop(0)]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolve)
    # This test's stand-in for a public address: the target on 127.0.0.1.
    monkeypatch.setattr(rest_api_tool, "_blocked", lambda address: str(address) != "127.0.0.1")
    toolset = OpenAPIToolset(spec_str=target.spec, base_url=f"http://pets.test:{port}")
    try:
        pinned = await tool(toolset, "get_pet").call(args={"pet_id": 1})
        mixed = await tool(toolset, "get_pet").call(args={"pet_id": 1})
    finally:
        await toolset.close()

    assert pinned["name"] == "Rex"
    [request] = await target.received()
    assert request["headers"]["host"] == f"pets.test:{port}"
    # One private address among the answers is enough to refuse.
    assert mixed["error"]["type"] == "openapi-destination-refused"


def test_non_http_server_urls_are_refused_when_the_toolset_is_built(target: Target) -> None:
    with pytest.raises(ValueError, match="absolute http"):
        OpenAPIToolset(spec_str=target.spec, base_url="file:///etc/passwd")
    relative = target.spec.replace(target.url, "/api")
    with pytest.raises(ValueError, match="base_url"):
        OpenAPIToolset(spec_str=relative)


async def test_an_answer_over_the_limit_is_an_error_result(
    toolset: OpenAPIToolset, target: Target
) -> None:
    big = tool(toolset, "get_big")
    declared = await big.call(args={})  # Content-Length says so: refused before reading
    streamed = await big.call(args={"stream": True})  # no length: cut while reading

    for answer in (declared, streamed):
        assert answer["error"]["type"] == "openapi-response-too-large"
        assert answer["error"]["status"] == 200
        assert answer["error"]["limit"] == MIB

    roomy = OpenAPIToolset(
        spec_str=target.spec, max_response_bytes=2 * MIB, allow_private_network_access=True
    )
    try:
        answer = await tool(roomy, "get_big").call(args={"stream": True})
    finally:
        await roomy.close()
    assert len(answer["result"]) == BIG_BYTES // 65536 * 65536


async def test_unreachable_and_slow_services_are_error_results(target: Target) -> None:
    nobody = OpenAPIToolset(
        spec_str=target.spec,
        base_url=f"http://127.0.0.1:{free_port()}",
        allow_private_network_access=True,
    )
    slow = OpenAPIToolset(spec_str=target.spec, timeout=0.3, allow_private_network_access=True)
    try:
        [(_, refused)] = await drive(nobody, ("get_pet", {"pet_id": 1}))
        started = time.monotonic()
        late = await tool(slow, "get_slow").call(args={})
        waited = time.monotonic() - started
    finally:
        await nobody.close()
        await slow.close()

    assert refused["error"]["type"] == "openapi-request-failed"
    assert "ConnectError" in refused["error"]["detail"]
    assert late["error"]["type"] == "openapi-request-failed"
    assert late["error"]["detail"] == "no answer within 0.3 s"
    assert waited < 1.5


async def test_close_closes_the_shared_client(toolset: OpenAPIToolset) -> None:
    await tool(toolset, "get_pet").call(args={"pet_id": 1})
    await tool(toolset, "list_pets").call(args={})
    client = toolset.client.http
    assert client is not None
    assert all(
        isinstance(t, RestApiTool) and t.client is toolset.client for t in await toolset.get_tools()
    )

    await toolset.close()

    assert client.is_closed
    assert toolset.client.http is None
    # A later call (a toolset closed early) opens a new client rather than failing.
    assert (await tool(toolset, "get_pet").call(args={"pet_id": 1}))["id"] == 1


def test_token_to_scheme_credential_builds_adks_pairs() -> None:
    key_scheme, key = token_to_scheme_credential("apikey", "query", "api_key", "v")
    assert isinstance(key_scheme, APIKey)
    assert (key_scheme.in_, key_scheme.name) == (APIKeyIn.query, "api_key")
    assert key == AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="v")

    bearer_scheme, bearer = token_to_scheme_credential("oauth2Token", "header", "x", "t")
    assert isinstance(bearer_scheme, HTTPBearer)
    assert bearer is not None
    assert bearer.http == HttpAuth(scheme="bearer", credentials=HttpCredentials(token="t"))

    assert token_to_scheme_credential("apikey", "header", "X-API-Key")[1] is None
    with pytest.raises(ValueError, match="location"):
        token_to_scheme_credential("apikey", None, "k", "v")


def test_credentials_agentd_cannot_send_fail_when_the_toolset_is_built(target: Target) -> None:
    scheme, account = service_account_scheme_credential(ServiceAccount(scopes=["s"]))
    with pytest.raises(ValueError, match="not supported"):
        OpenAPIToolset(spec_str=target.spec, auth_scheme=scheme, auth_credential=account)
    basic = AuthCredential(
        auth_type=AuthCredentialTypes.HTTP,
        http=HttpAuth(scheme="basic", credentials=HttpCredentials(username="u", password="p")),
    )
    with pytest.raises(ValueError, match="basic"):
        OpenAPIToolset(spec_str=target.spec, auth_credential=basic)


def test_the_document_must_have_paths() -> None:
    with pytest.raises(ValueError, match="paths"):
        OpenAPIToolset(spec_dict={"openapi": "3.1.0"})
    with pytest.raises(ValueError, match="spec type"):
        OpenAPIToolset(spec_str="{}", spec_str_type="toml")  # type: ignore[arg-type]
