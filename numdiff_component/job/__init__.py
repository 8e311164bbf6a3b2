"""The job of ``numdiff score``: `run_job` (`run`) opens the input, scores it with an engine,
writes the results and the report, and logs the run. What it is asked and where its results go
are in `numdiff_component.task`, which every part it runs imports instead of this.

``from numdiff_component.job import JobConfig, Scoring, run_job`` works (docs/spark.md).
"""

from __future__ import annotations

from numdiff_component.lazy import lazy_names

_PUBLIC = {
    "JobConfig": "numdiff_component.task.config",
    "Scoring": "numdiff_component.task.config",
    "run_job": "numdiff_component.job.run",
}
__getattr__ = lazy_names(__name__, _PUBLIC)
__all__ = list(_PUBLIC)
