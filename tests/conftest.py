"""pytest setup for the tests: the environment every test runs in, the fixtures of
`tests/fixtures/` (plain helpers are imported from there: ``from tests.fixtures.tables import
write_table``), and how pytest-xdist shares a run between its workers.

The suite runs under pytest-xdist (``-n auto`` in pyproject.toml): what is costly to make is
made once per run for all workers (`tests.fixtures.run.once_per_run`), and no test may rely on
another's leftovers or on what the checkout folder holds besides the repository's files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures.run import RUN_DIR, TEST_JVM_OPTIONS, make_run_folder

pytest_plugins = ("tests.fixtures.stores", "tests.fixtures.servers", "tests.fixtures.commands")

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
# The 20 s deadline per tracking call is for users; on a loaded machine making a new sqlite store
# alone can take longer. Tests of the deadline set their own.
os.environ.setdefault("NUMDIFF_TRACKING_TIMEOUT", "120")
os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTIONS)

_made_here: Path | None = None  # the run folder, in the process that made it (and cleans up)


def pytest_configure(config: pytest.Config) -> None:
    global _made_here
    _made_here = make_run_folder() or _made_here


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core and one more. Many tests wait on what they start (a
    server or a JVM, a deadline passing), which one worker per core leaves idle; but each
    worker imports and collects everything again, and more workers' processes only compete
    for the cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist's workers, the longest work first: with ``--dist loadscope
    --no-loadscope-reorder`` (pyproject.toml) xdist hands the scopes (a module, or a class of
    tests/test_readme.py) out in the order of their first test."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_weight)


SPARK_FILES = ("test_spark_cluster.py", "test_spark.py")
SHARED_SCOPES = {"tests/engines/test_spark_groups.py": "tests/engines/test_spark.py"}
"""Modules that go to the worker of another (loadscope hands out a module as one unit): the
Spark groups tests use test_spark.py's session, one JVM per run instead of one per worker."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadscope``, with the modules of `SHARED_SCOPES` in the scope of another."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return SHARED_SCOPES.get(scope, scope)

    return SharedScopes(config, log)  # type: ignore[arg-type]


def _weight(item: pytest.Item) -> int:
    """The files that start Spark (a JVM, a cluster, a server), then those with slow tests,
    then the rest, which fill the workers' time at the end instead of a lone Spark file."""
    if Path(item.path).name in SPARK_FILES:
        return 0
    return 1 if item.get_closest_marker("slow") else 2


def pytest_unconfigure(config: pytest.Config) -> None:
    global _made_here
    if _made_here is None:
        return
    from tests.fixtures.servers import stop_group

    for pid_file in _made_here.glob("*/pid"):
        stop_group(int(pid_file.read_text()))
    shutil.rmtree(_made_here, ignore_errors=True)
    os.environ.pop(RUN_DIR, None)
    _made_here = None
