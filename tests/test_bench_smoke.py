"""The benchmarks run end to end with tiny sizes, so they cannot rot (no timing is asserted)."""

from bench.artifact_rss import run


def test_artifact_rss_benchmark_runs_and_round_trips_the_bytes() -> None:
    figures = run(mib=2)
    assert figures["artifact_mib"] == 2
    assert isinstance(figures["peak_growth_mib"], float)
