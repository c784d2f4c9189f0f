"""Every request example of README.md runs against a live server and answers as shown.

The README cannot drift from the server: its examples are extracted and run here, in README
order, against one real server configured as `make run` serves (SQLite, the shipped agents dir,
`AGENTD_AUTH` left at its default, `none`). The convention, also told to readers in the README's
"How to read the examples":

- An **example** is a fenced `bash` block whose first command is `curl` (run with the real `bash`
  and `curl`), or a fenced `python` block that imports httpx (run with this interpreter). Every
  such block is an example: none can be left out of the test.
- Its **answer** is the next fenced block: `json` (the output is parsed and compared as JSON) or
  `text` (compared line by line; frame by frame, with `data:` compared as JSON, when the answer
  is a server-sent event stream).
- In an answer, a string that is only `<...>` (`"<id>"`, `"<timestamp>"`) matches any value;
  `<...>` inside a string or a text line matches any text; an object entry `"...": "..."` allows
  keys that are not shown; an array item `"..."` matches any number of items; a text line `...`
  any number of lines (of frames, in a stream). A string `"$NAME"` matches any value and keeps it
  as the shell variable `NAME` of the examples after it. Every other key and value must match.
- `http://127.0.0.1:8000` (where `make run` serves) is replaced by the test server's address.
"""

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.live_server import PROJECT_ROOT, LiveServer

README = PROJECT_ROOT / "README.md"
MAKE_RUN_URL = "http://127.0.0.1:8000"
EXAMPLE_SECONDS = 60

_FENCE = re.compile(r"^(`{3,})([\w-]*)\s*$")
_PLACEHOLDER = re.compile(r"<[^<>\s][^<>]*>")
_CAPTURE = re.compile(r"^\$([A-Z][A-Z0-9_]*)$")
_SSE_FIELD = re.compile(r"^(id|event|data|retry):")


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    line: int
    lang: str
    text: str


@dataclass(frozen=True)
class Example:
    """A request example and the answer shown after it."""

    block: Block
    answer: Block | None

    @property
    def kind(self) -> str:
        """`curl` or `python`."""
        return "curl" if self.block.lang == "bash" else "python"

    @property
    def where(self) -> str:
        """Where the example is, for failure messages."""
        return f"README.md:{self.block.line} ({self.kind})"


@dataclass
class Mismatch(Exception):
    """An answer differs from the one the README shows."""

    path: str
    detail: str

    def __str__(self) -> str:
        return f"at {self.path or 'the top'}: {self.detail}"


@dataclass
class Captures:
    """Values `"$NAME"` placeholders kept for later examples."""

    values: dict[str, str] = field(default_factory=dict)


def fenced_blocks(markdown: str) -> Iterator[Block]:
    """The fenced blocks of a markdown document, with their language and first line number."""
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, lang = opening.group(1), opening.group(2)
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != fence:
            body.append(lines[index])
            index += 1
        yield Block(line=index - len(body), lang=lang, text="\n".join(body) + "\n")
        index += 1


def _is_example(block: Block) -> bool:
    if block.lang == "bash":
        commands = [
            line.strip()
            for line in block.text.splitlines()
            if line.strip() and not line.strip().startswith("#")
        ]
        return bool(commands) and commands[0].startswith("curl ")
    return block.lang == "python" and re.search(r"^import httpx$", block.text, re.M) is not None


def readme_examples(markdown: str) -> list[Example]:
    """Every example of the document with the block after it (its answer, if it is one)."""
    blocks = list(fenced_blocks(markdown))
    examples = []
    for position, block in enumerate(blocks):
        if not _is_example(block):
            continue
        after = blocks[position + 1] if position + 1 < len(blocks) else None
        answer = after if after is not None and after.lang in ("json", "text") else None
        examples.append(Example(block=block, answer=answer))
    return examples


def _pattern(template: str) -> re.Pattern[str]:
    """A template with `<...>` placeholders as a regex matching the whole text."""
    parts = _PLACEHOLDER.split(template)
    return re.compile(".*".join(re.escape(part) for part in parts), re.S)


def match_json(expected: Any, actual: Any, captures: Captures, path: str = "") -> None:
    """Raise Mismatch unless `actual` is what `expected` shows, placeholders aside."""
    if isinstance(expected, str):
        captured = _CAPTURE.match(expected)
        if captured:
            captures.values[captured.group(1)] = (
                actual if isinstance(actual, str) else json.dumps(actual)
            )
            return
        if _PLACEHOLDER.fullmatch(expected):
            return
        if _PLACEHOLDER.search(expected):
            if isinstance(actual, str) and _pattern(expected).fullmatch(actual):
                return
            raise Mismatch(path, f"{actual!r} does not match {expected!r}")
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise Mismatch(path, f"expected an object, got {actual!r}")
        shown = {key: value for key, value in expected.items() if key != "..."}
        missing = [key for key in shown if key not in actual]
        if missing:
            raise Mismatch(path, f"keys {missing} missing from {sorted(actual)}")
        extra = [key for key in actual if key not in shown]
        if extra and expected.get("...") != "...":
            raise Mismatch(path, f'keys {extra} not shown (add "...": "..." to allow them)')
        for key, value in shown.items():
            match_json(value, actual[key], captures, f"{path}.{key}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list):
            raise Mismatch(path, f"expected an array, got {actual!r}")
        _match_items(expected, actual, captures, path, 0, 0)
        return
    if type(expected) is not type(actual) or expected != actual:
        raise Mismatch(path, f"{actual!r} is not {expected!r}")


def _match_items(
    expected: list[Any], actual: list[Any], captures: Captures, path: str, i: int, j: int
) -> None:
    if i == len(expected):
        if j != len(actual):
            raise Mismatch(path, f"{len(actual) - j} more items than shown")
        return
    if expected[i] == "...":
        # Zero or more items: the shortest run that lets the rest match.
        last: Mismatch | None = None
        for skip in range(len(actual) - j + 1):
            trial = Captures(dict(captures.values))
            try:
                _match_items(expected, actual, trial, path, i + 1, j + skip)
            except Mismatch as mismatch:
                last = mismatch
                continue
            captures.values.update(trial.values)
            return
        assert last is not None
        raise last
    if j == len(actual):
        raise Mismatch(path, f"item {j} missing (the array has {len(actual)})")
    match_json(expected[i], actual[j], captures, f"{path}[{j}]")
    _match_items(expected, actual, captures, path, i + 1, j + 1)


def _match_lines(expected: list[str], actual: list[str], captures: Captures, what: str) -> None:
    """Line templates (`...` = any lines) against lines, first failure raised."""
    if not expected:
        if actual:
            raise Mismatch(what, f"unexpected output {actual[0]!r}")
        return
    head, *rest = expected
    if head == "...":
        for skip in range(len(actual) + 1):
            try:
                _match_lines(rest, actual[skip:], captures, what)
                return
            except Mismatch:
                continue
        raise Mismatch(what, f"nothing matches {rest[:1]!r} after skipping lines")
    if not actual:
        raise Mismatch(what, f"output ended before {head!r}")
    if not _pattern(head).fullmatch(actual[0]):
        raise Mismatch(what, f"{actual[0]!r} does not match {head!r}")
    _match_lines(rest, actual[1:], captures, what)


def sse_frames(text: str) -> list[dict[str, str]]:
    """The frames of a server-sent event stream (comments left out)."""
    frames: list[dict[str, str]] = []
    frame: dict[str, str] = {}
    for line in [*text.replace("\r\n", "\n").split("\n"), ""]:
        if line == "...":
            frames.append({"...": "..."})
        elif not line:
            if frame:
                frames.append(frame)
            frame = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            frame[name] = value.removeprefix(" ")
    return frames


def match_sse(expected: str, actual: str, captures: Captures) -> None:
    """Frames against frames: fields equal, `data` as JSON when it is, `...` any frames."""
    expected_frames = [
        "..." if frame == {"...": "..."} else _frame_template(frame)
        for frame in sse_frames(expected)
    ]
    actual_frames = [_frame_value(frame) for frame in sse_frames(actual)]
    match_json(expected_frames, actual_frames, captures, "stream")


def _frame_template(frame: dict[str, str]) -> dict[str, Any]:
    return {"event": "message", **frame, "data": _json_or_text(frame.get("data", ""))}


def _frame_value(frame: dict[str, str]) -> dict[str, Any]:
    return {"event": "message", **frame, "data": _json_or_text(frame.get("data", ""))}


def _json_or_text(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data


def check_answer(answer: Block, output: str, captures: Captures) -> None:
    """Raise Mismatch unless the output is the answer the README shows."""
    if answer.lang == "json":
        try:
            actual = json.loads(output)
        except ValueError:
            raise Mismatch("", f"the output is not JSON: {output[:300]!r}") from None
        match_json(json.loads(answer.text), actual, captures)
    elif _SSE_FIELD.match(answer.text.lstrip()):
        match_sse(answer.text, output, captures)
    else:
        _match_lines(
            answer.text.rstrip("\n").splitlines(), output.rstrip("\n").splitlines(), captures, ""
        )


def run_example(example: Example, base_url: str, workdir: Path, captures: Captures) -> str:
    """Run one example against `base_url`; its standard output."""
    code = example.block.text.replace(MAKE_RUN_URL, base_url)
    env = {**os.environ, **captures.values}
    if example.kind == "curl":
        command = ["bash", "-e", "-o", "pipefail", "-c", code]
    else:
        command = [sys.executable, "-c", code]
    done = subprocess.run(
        command,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=EXAMPLE_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise Mismatch("", f"exited {done.returncode}: {done.stderr[-2000:]}{done.stdout[-500:]}")
    return done.stdout


# --- the matcher itself ---------------------------------------------------------------------


def test_placeholders_match_any_value_but_keys_and_fixed_values_must_match() -> None:
    captures = Captures()
    shown = {"id": "<id>", "status": "completed", "when": "<timestamp>", "by": "e-<id>"}
    match_json(shown, {"id": "x1", "status": "completed", "when": 1.5, "by": "e-42"}, captures)
    with pytest.raises(Mismatch, match="failed"):
        match_json(shown, {"id": "x", "status": "failed", "when": 1, "by": "e-1"}, captures)
    with pytest.raises(Mismatch, match="missing"):
        match_json(shown, {"id": "x", "status": "completed", "when": 1}, captures)
    with pytest.raises(Mismatch, match="not shown"):
        match_json({"id": "<id>"}, {"id": "x", "extra": 1}, captures)
    match_json({"id": "<id>", "...": "..."}, {"id": "x", "extra": 1}, captures)
    with pytest.raises(Mismatch, match="does not match"):
        match_json({"by": "e-<id>"}, {"by": "f-1"}, captures)
    with pytest.raises(Mismatch, match="is not"):
        match_json({"n": 1}, {"n": True}, captures)


def test_an_ellipsis_item_matches_any_number_of_items_and_captures_keep_values() -> None:
    captures = Captures()
    match_json([1, "...", {"last": "$LAST"}], [1, 2, 3, {"last": "z"}], captures)
    match_json(["..."], [], captures)
    assert captures.values == {"LAST": "z"}
    with pytest.raises(Mismatch):
        match_json([1, "...", 9], [1, 2, 3], captures)
    with pytest.raises(Mismatch, match="more items"):
        match_json([1], [1, 2], captures)


def test_text_and_stream_answers_match_line_by_line_and_frame_by_frame() -> None:
    captures = Captures()
    check_answer(Block(1, "text", "a <x> b\n...\nend\n"), "a 1 b\nmore\nlines\nend\n", captures)
    with pytest.raises(Mismatch):
        check_answer(Block(1, "text", "a <x> b\n"), "a 1 c\n", captures)
    stream = Block(1, "text", 'id: <seq>\nevent: event\ndata: {"n": 1, "...": "..."}\n\n...\n')
    check_answer(
        stream, 'id: 3\nevent: event\ndata: {"n":1,"m":2}\n\n: ping\n\nevent: done\n', captures
    )
    with pytest.raises(Mismatch):
        check_answer(stream, 'id: 3\nevent: partial\ndata: {"n":1}\n\n', captures)


def test_an_example_without_its_answer_is_found_and_reported() -> None:
    markdown = (
        "```bash\ncurl -s http://x\n```\n\n```python\nimport httpx\n```\n\n```json\n{}\n```\n"
    )
    first, second = readme_examples(markdown)
    assert (first.kind, first.answer) == ("curl", None)
    assert (second.kind, second.answer) == ("python", Block(9, "json", "{}\n"))


# --- the README ------------------------------------------------------------------------------


def test_the_readme_has_curl_and_python_examples_each_with_its_answer() -> None:
    examples = readme_examples(README.read_text())
    assert {example.kind for example in examples} == {"curl", "python"}
    assert len(examples) >= 10, "the README lost its examples"
    assert [example.where for example in examples if example.answer is None] == []


def test_every_curl_command_of_the_readme_is_a_run_example() -> None:
    markdown = README.read_text()
    commands = re.findall(r"^\s*curl .*$", markdown, re.M)
    in_examples = [
        line
        for example in readme_examples(markdown)
        for line in example.block.text.splitlines()
        if line.lstrip().startswith("curl ")
    ]
    assert commands, "README.md has no curl examples"
    assert len(commands) == len(in_examples), "a curl command outside a ```bash example block"


def github_anchor(heading: str) -> str:
    """The fragment GitHub gives a heading: lower case, punctuation dropped, spaces as `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_readme_links_name_its_headings_and_existing_files() -> None:
    markdown = README.read_text()
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    anchors = {github_anchor(m) for m in re.findall(r"^#{1,6} (.+)$", prose, re.M)}
    targets = re.findall(r"\]\(([^)\s]+)\)", prose)
    broken = [
        target
        for target in targets
        if not target.startswith(("http://", "https://"))
        and (
            target.removeprefix("#") not in anchors
            if target.startswith("#")
            else not (PROJECT_ROOT / target.split("#")[0]).exists()
        )
    ]
    assert broken == []
    assert github_anchor("Models: OpenAI, Claude, local servers, fallbacks") == (
        "models-openai-claude-local-servers-fallbacks"
    )


def test_every_readme_example_answers_as_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = readme_examples(README.read_text())
    assert examples, "README.md has no examples"
    for name in [key for key in os.environ if key.startswith("AGENTD_")]:
        monkeypatch.delenv(name)  # the defaults `make run` serves with (no key), not the caller's
    server = LiveServer(
        tmp_path / "server",
        {
            "AGENTD_DATA_DIR": str(tmp_path / "data"),
            "AGENTD_AGENTS_DIR": str(PROJECT_ROOT / "agents"),
        },
    )
    workdir = tmp_path / "client"
    workdir.mkdir()
    captures = Captures()
    server.start()
    try:
        for example in examples:
            assert example.answer is not None, f"{example.where} shows no answer"
            try:
                output = run_example(example, server.url, workdir, captures)
                check_answer(example.answer, output, captures)
            except (Mismatch, subprocess.TimeoutExpired) as problem:
                pytest.fail(f"{example.where} does not answer as shown: {problem}")
    finally:
        server.stop()
