"""Acceptance 4 of issue 17 over real HTTP: `/run_sse` through a live agentd server whose app's
agent is `OpenAILlm(model="openai/<name>", base_url=<stub>/v1)`, the stub streaming in the exact
chunk shapes vLLM and Ollama send. The frames are partial text events then the final event (after
the tool call and its answer when the model calls one); the stored session holds no partial.

vLLM (OpenAI's shape): a first chunk with the role and empty content, content deltas, a last
choice chunk with `finish_reason` (and vLLM's own `stop_reason`), then, as `include_usage` asks, a
usage chunk with `choices: []`. Ollama: every delta repeats `role: assistant`, chunks carry
`system_fingerprint: fp_ollama`, the last one has empty content and the finish reason, and (as
older Ollama versions do) no usage chunk at all. Tool calls: vLLM sends the call's id and name,
then its arguments in pieces; Ollama sends each call whole in one delta.
"""

import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, iter_sse
from tests.openai_stub import OpenAIStub

APP = "openai_sse_app"
USER = "u1"

AGENT_PY = """
from app.agents import LlmAgent
from app.models.openai_llm import OpenAILlm


def get_capital_city(country: str) -> str:
    \"\"\"Retrieves the capital city of a given country.\"\"\"
    return {{"france": "Paris"}}.get(country.lower(), "unknown")


root_agent = LlmAgent(
    name="assistant",
    model=OpenAILlm(model="openai/{model}", base_url="{base_url}", api_key="x"),
    instruction="You answer briefly.",
    tools=[get_capital_city],
)
"""


def _vllm_chunks(model: str, pieces: list[str]) -> list[dict[str, Any]]:
    """What vLLM's OpenAI server streams for a text answer with `include_usage`."""

    def frame(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-9f3c2d",
            "object": "chat.completion.chunk",
            "created": 1_732_540_000,
            "model": model,
            "choices": choices,
            **extra,
        }

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish,
        }
        if finish is not None:
            entry["stop_reason"] = None
        return entry

    chunks = [frame([choice({"role": "assistant", "content": ""})])]
    chunks += [frame([choice({"content": piece})]) for piece in pieces]
    chunks.append(frame([choice({"content": ""}, "stop")]))
    usage = {"prompt_tokens": 21, "total_tokens": 27, "completion_tokens": 6}
    chunks.append(frame([], usage=usage))
    return chunks


def _ollama_chunks(model: str, pieces: list[str]) -> list[dict[str, Any]]:
    """What Ollama's OpenAI-compatible endpoint streams for a text answer (no usage chunk)."""

    def frame(content: str, finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-412",
            "object": "chat.completion.chunk",
            "created": 1_732_540_000,
            "model": model,
            "system_fingerprint": "fp_ollama",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": content},
                    "finish_reason": finish,
                }
            ],
        }

    return [*(frame(piece) for piece in pieces), frame("", "stop")]


def _frame(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-7a1",
        "object": "chat.completion.chunk",
        "created": 1_732_540_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _vllm_tool_call_chunks(model: str) -> list[dict[str, Any]]:
    """vLLM's tool parser stream: the call's id and name first, then its arguments in pieces."""
    head = {
        "id": "chatcmpl-tool-5b2e",
        "type": "function",
        "index": 0,
        "function": {"name": "get_capital_city"},
    }
    pieces = ['{"country": ', '"Fra', 'nce"}']
    return [
        _frame(model, {"role": "assistant", "content": ""}),
        _frame(model, {"tool_calls": [head]}),
        *(
            _frame(model, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces
        ),
        _frame(model, {"content": ""}, "tool_calls"),
        {
            **_frame(model, {}),
            "choices": [],
            "usage": {"prompt_tokens": 40, "total_tokens": 52, "completion_tokens": 12},
        },
    ]


def _ollama_tool_call_chunks(model: str) -> list[dict[str, Any]]:
    """Ollama's stream of a tool call: the whole call in one delta, then the finish reason."""
    call = {
        "id": "call_hk81qg8b",
        "index": 0,
        "type": "function",
        "function": {"name": "get_capital_city", "arguments": '{"country":"France"}'},
    }
    return [
        _frame(model, {"role": "assistant", "content": "", "tool_calls": [call]}),
        _frame(model, {"role": "assistant", "content": ""}, "tool_calls"),
    ]


@dataclass
class Served:
    """A live server with the OpenAI app, its client and the stub its agent calls."""

    http: httpx.Client
    stub: OpenAIStub


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose agents dir holds one app on OpenAILlm, pointed at the stub."""
    root = tmp_path_factory.mktemp("openai-run-sse")
    agents = root / "agents"
    (agents / APP).mkdir(parents=True)
    with OpenAIStub() as stub:
        (agents / APP / "__init__.py").write_text("")
        agent_py = AGENT_PY.format(model="served-model", base_url=stub.base_url)
        (agents / APP / "agent.py").write_text(textwrap.dedent(agent_py))
        env = {"AGENTD_DATA_DIR": str(root / "data"), "AGENTD_AGENTS_DIR": str(agents)}
        server = LiveServer(root / "server", env).start()
        try:
            with httpx.Client(base_url=server.url, timeout=30) as client:
                yield Served(http=client, stub=stub)
        finally:
            server.stop()


def _run_sse(http: httpx.Client, sid: str, text: str) -> list[dict[str, Any]]:
    """`POST /run_sse` with streaming on: every frame's event, in order."""
    created = http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": sid})
    assert created.status_code == 201, created.text
    body = {
        "appName": APP,
        "userId": USER,
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
        "streaming": True,
    }
    with http.stream("POST", "/run_sse", json=body) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = list(iter_sse(response.iter_lines()))
    return [json.loads(f.data) for f in frames if f.data]


def _stored(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    got = http.get(f"/apps/{APP}/users/{USER}/sessions/{sid}")
    assert got.status_code == 200, got.text
    events: list[dict[str, Any]] = got.json()["events"]
    return events


def _text(event: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in (event.get("content") or {}).get("parts", []))


@pytest.mark.parametrize(
    ("server", "chunks", "usage"),
    [
        ("vllm", _vllm_chunks, {"promptTokenCount": 21, "candidatesTokenCount": 6}),
        ("ollama", _ollama_chunks, None),
    ],
)
def test_run_sse_streams_an_openai_compatible_server(
    served: Served, server: str, chunks: Any, usage: dict[str, int] | None
) -> None:
    pieces = ["The capital ", "of France ", "is Paris."]
    served.stub.reply_stream(chunks("served-model", pieces))
    sent_before = len(served.stub.requests)

    events = _run_sse(served.http, f"s-{server}", "What is the capital of France?")

    *partials, final = events
    assert [e.get("partial") for e in partials] == [True, True, True]
    assert [_text(e) for e in partials] == pieces
    assert all(e["author"] == "assistant" for e in events)
    assert final.get("partial") in (None, False)
    assert final["content"] == {
        "role": "model",
        "parts": [{"text": "The capital of France is Paris."}],
    }
    assert final["finishReason"] == "STOP"
    assert final["modelVersion"] == "served-model"
    if usage is None:
        assert "usageMetadata" not in final
    else:
        assert usage.items() <= final["usageMetadata"].items()

    (request,) = served.stub.requests[sent_before:]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "served-model"  # sent without the `openai/` prefix
    assert request["body"]["stream"] is True
    assert request["body"]["messages"][-1] == {
        "role": "user",
        "content": "What is the capital of France?",
    }
    assert "You answer briefly." in request["body"]["messages"][0]["content"]

    stored = _stored(served.http, f"s-{server}")
    assert [(e["author"], _text(e)) for e in stored] == [
        ("user", "What is the capital of France?"),
        ("assistant", "The capital of France is Paris."),
    ]
    assert stored[-1]["id"] == final["id"]
    assert not any(e.get("partial") for e in stored)
    # Every request so far streamed; this one was read to its end.
    assert served.stub.wait_for_stream_end(sent_before + 1)[-1] == "finished"


@pytest.mark.parametrize(
    ("server", "calls", "answer", "call_id"),
    [
        ("vllm", _vllm_tool_call_chunks, _vllm_chunks, "chatcmpl-tool-5b2e"),
        ("ollama", _ollama_tool_call_chunks, _ollama_chunks, "call_hk81qg8b"),
    ],
)
def test_run_sse_streams_a_tool_call_round_trip(
    served: Served, server: str, calls: Any, answer: Any, call_id: str
) -> None:
    served.stub.reply_stream(calls("served-model"))
    served.stub.reply_stream(answer("served-model", ["Paris", "."]))
    sent_before = len(served.stub.requests)
    sid = f"s-tools-{server}"

    events = _run_sse(served.http, sid, "Capital of France?")

    call_event, response_event, *partials, final = events
    (call_part,) = call_event["content"]["parts"]
    assert call_part["functionCall"] == {
        "id": call_id,
        "name": "get_capital_city",
        "args": {"country": "France"},
    }
    (response_part,) = response_event["content"]["parts"]
    assert response_part["functionResponse"]["id"] == call_id
    assert response_part["functionResponse"]["response"] == {"result": "Paris"}
    assert [_text(e) for e in partials] == ["Paris", "."]
    assert all(e.get("partial") for e in partials)
    assert _text(final) == "Paris."

    first, second = served.stub.requests[sent_before:]
    assert [t["function"]["name"] for t in first["body"]["tools"]] == ["get_capital_city"]
    assistant, tool = second["body"]["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == call_id
    assert tool == {"role": "tool", "tool_call_id": call_id, "content": '{"result": "Paris"}'}
    stored = _stored(served.http, sid)
    assert [e["id"] for e in stored[1:]] == [call_event["id"], response_event["id"], final["id"]]
