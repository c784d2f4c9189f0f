"""The recorded ADK exchanges in `tests/data/adk-fixtures/` are the verbatim copies their README
lists: every file there has its SHA-256 in the README and matches it, so an edited recording
(which would make the wire tests compare agentd with something ADK never said) fails here."""

import hashlib
import re

from tests.adk_fixtures import FIXTURES, adk_fixture

SUM_LINE = re.compile(r"^([0-9a-f]{64})  (\S+\.json)$", re.MULTILINE)


def test_every_recorded_exchange_matches_the_sum_its_readme_lists() -> None:
    listed = {
        name: digest for digest, name in SUM_LINE.findall((FIXTURES / "README.md").read_text())
    }
    present = {path.name for path in FIXTURES.glob("*.json")}

    assert set(listed) == present
    for name, digest in sorted(listed.items()):
        assert hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() == digest, name


def test_a_recorded_exchange_reads_as_its_request_and_response() -> None:
    recorded = adk_fixture("create_session")

    assert recorded["request"]["method"] == "POST"
    assert recorded["response"]["status"] == 200
