"""The benchmarks run end to end with tiny sizes, so they cannot rot (no timing is asserted)."""

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
