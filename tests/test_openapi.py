"""The committed openapi.json is the app's spec, and every operation is fully documented."""

import json
from pathlib import Path
from typing import Any

from scripts.export_openapi import render

ROOT = Path(__file__).resolve().parents[1]


def _spec() -> dict[str, Any]:
    spec: dict[str, Any] = json.loads((ROOT / "openapi.json").read_text())
    return spec


def test_committed_spec_matches_the_app() -> None:
    assert (ROOT / "openapi.json").read_text() == render(), "run `make openapi` and commit"


def test_every_operation_has_id_tag_summary_and_problem_responses() -> None:
    operations = [
        (path, method, operation)
        for path, methods in _spec()["paths"].items()
        for method, operation in methods.items()
    ]
    ids = [operation["operationId"] for _, _, operation in operations]
    assert len(ids) == len(set(ids))
    for path, method, operation in operations:
        where = f"{method.upper()} {path}"
        assert operation.get("summary"), where
        assert operation.get("tags"), where
        errors = {c: r for c, r in operation["responses"].items() if c[0] in "45"}
        assert errors, where
        for code, response in errors.items():
            assert "application/problem+json" in response["content"], (where, code)
        if "health" not in operation["tags"]:
            assert {"401", "429"} <= set(errors), where
