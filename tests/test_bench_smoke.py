"""The benchmarks run end to end with tiny sizes, so they cannot rot (no timing is asserted)."""

import argparse

from bench import compare, long_session, pages, streams
from bench.artifact_rss import run
from bench.load import run as load_run


def test_artifact_rss_benchmark_runs_and_round_trips_the_bytes() -> None:
    figures = run(mib=2)
    assert figures["artifact_mib"] == 2
    assert isinstance(figures["peak_growth_mib"], float)


def test_load_benchmark_runs_every_workload_without_errors() -> None:
    figures = load_run("sqlite", creates=3, turns_c1=2, turns_c16=1, history=3)
    for workload in ("create", "run_c1", "run_c16", "history"):
        assert figures[workload]["requests"] > 0
        assert figures[workload]["errors"] == 0
    assert "run_ms_at_turn_3" in figures["history"]


def test_compare_benchmark_runs_the_agentd_side_and_prints_the_table() -> None:
    args = argparse.Namespace(
        creates=2, turns_c1=1, turns_c16=1, history=2, repeats=1, alternating_rounds=2
    )
    figures = compare.run_agentd(args, auth=True)
    assert figures["same_session_8"]["status_codes"] == {"200": 8}
    assert figures["same_session_8"]["wall_ms"] > 0
    assert figures["same_session_8"]["target_ms"] > figures["same_session_8"]["one_run_ms"] > 0
    alternating = compare.run_alternating_creates(args, adk=False)
    assert set(alternating) == {"agentd", "agentd_auth_none"}
    assert alternating["agentd"]["requests"] == 2
    assert alternating["agentd"]["errors"] == alternating["agentd_auth_none"]["errors"] == 0
    figures["create_alternating"] = alternating["agentd"]
    rendered = compare.table({"agentd": figures})
    assert "| run_c16 | req_per_s |" in rendered
    assert "| create_alternating | server_cpu_ms_per_req |" in rendered
    assert "| same_session_8 | wall_ms |" in rendered


def test_pages_benchmark_measures_both_sessions() -> None:
    figures = pages.run(small=3, large=12, repeats=2)
    assert set(figures) == {"small_3_events", "large_12_events"}
    assert figures["large_12_events"]["last_page"]["p50_ms"] > 0


def test_long_session_benchmark_measures_requests_gets_and_cached_events() -> None:
    figures = long_session.run(turns=25, gets=5, get_turns=3, memory_events=40)
    plain = figures["long_plain"]
    assert plain["errors"] == 0
    assert plain["stored_events"] == 25 * 4  # user message, call, response, answer per turn
    probe = plain["checkpoints"][25]
    assert probe["contents"] == 24 * 4 + 3  # the history before this turn's answer
    assert probe["request_chars"] > 0
    assert probe["server_cpu_ms_per_turn"] is not None
    if long_session.compaction_available():
        assert figures["long_compacting"]["errors"] == 0
        assert figures["long_compacting"]["checkpoints"][25]["contents"] < probe["contents"]
    else:
        assert figures["long_compacting"] == "compaction: not available yet"
    assert figures["get_250"]["errors"] == 0
    assert figures["get_250"]["events"] == 3 * 4
    assert figures["cached_event_memory"]["events"] == 40
    memory = figures["cached_event_memory"]
    assert memory["cache_bytes_per_event_hot"] > memory["stored_json_bytes_per_event"] > 0
    assert memory["cache_bytes_per_event_cold"] > 0
    assert "| long_plain | 25 |" in long_session.table(figures)


def test_streams_benchmark_completes_whole_streams_on_two_workers() -> None:
    args = argparse.Namespace(
        seconds=2.5, clients=1, workers=2, loop="auto", max_inflight=0, json=False
    )
    step = streams.run_step(4, args)
    assert step["completed"] >= 4
    assert step["errors"] == {}
    assert step["refused_503"] == 0
    assert step["first_chunk_p50_ms"] < step["latency_p50_ms"]
    assert step["server_cpu_ms_per_stream"] > 0
    assert "| 4 |" in streams.table([step])
