"""The job of ``numdiff score``: its configuration (`config`), its results folder and what a
run records of it (`results`), and `run_job` (`run`).

``from numdiff_component.job import JobConfig, run_job`` works (README, docs/spark.md); the
names are looked up on first use, so that the modules below the job (the engines, the report,
tracking) can import `config` and `results` without importing the job itself.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_PUBLIC = {"JobConfig": "numdiff_component.job.config", "run_job": "numdiff_component.job.run"}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'numdiff_component.job' has no attribute {name!r}")


__all__ = list(_PUBLIC)
