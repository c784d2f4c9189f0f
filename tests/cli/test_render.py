"""How a stream shows in the terminal: text chunks as they come, once; the end's outcome."""

import pytest

from app.cli.render import StreamPrinter


def _text(text: str, *, partial: bool = False) -> dict[str, object]:
    return {
        "author": "a",
        "content": {"role": "model", "parts": [{"text": text}]},
        "partial": partial,
    }


def test_chunks_are_written_as_they_come_and_the_final_text_not_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printer = StreamPrinter()
    printer.frame("partial", _text("The capital "))
    assert capsys.readouterr().out == "The capital "  # before the rest has arrived
    printer.frame("partial", _text("is Paris."))
    printer.frame("event", _text("The capital is Paris."))
    printer.frame("done", {"id": "e-1", "status": "completed"})
    assert capsys.readouterr().out == "is Paris.\n"
    assert printer.status == "completed"
    assert not printer.failed


def test_a_failed_invocation_shows_its_problem_once(capsys: pytest.CaptureFixture[str]) -> None:
    printer = StreamPrinter()
    problem = {"type": "model-not-configured", "detail": "Set OPENAI_API_KEY."}
    printer.frame("error", problem)
    printer.frame("done", {"id": "e-1", "status": "failed", "error": problem})
    captured = capsys.readouterr()
    assert captured.err == "[failed] Set OPENAI_API_KEY. (model-not-configured)\n"
    assert printer.failed
