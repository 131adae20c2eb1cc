"""The benchmarks' client processes (tests/benchmarks/benchserver.py run_clients): a client
that dies stops the benchmark with its name instead of leaving it waiting forever."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import time

import pytest

from tests.benchmarks.benchserver import ROOT, run_clients


def _client(i: int, out: mp.Queue) -> None:
    if i == 1:
        raise RuntimeError("the client's own error")
    time.sleep(0.2)
    out.put(i)


def test_the_figures_of_every_client_are_collected() -> None:
    assert sorted(run_clients(_client, lambda i: (i * 2,), 3)) == [0, 2, 4]


def test_a_client_that_dies_stops_the_run_naming_it() -> None:
    with pytest.raises(SystemExit, match=r"client \(Process-\d+\) exited with code 1 before it"):
        run_clients(_client, lambda i: (i,), 3)


def test_fewer_users_than_clients_is_a_usage_error() -> None:
    run = subprocess.run([sys.executable, "-m", "tests.benchmarks.bench_api", "--users", "2",
                          "--clients", "4"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "--users 2 is fewer than --clients 4" in run.stderr
