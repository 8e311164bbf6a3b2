"""pytest setup for the whole checkout (``testpaths`` holds the package for its doctests).

``numdiff_component/engines/spark.py`` and ``numdiff_component/spark.py`` need the ``spark``
extra: without pyspark their doctests are not collected (importing them would fail), as
``tests/engines/test_spark.py`` skips itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent / "numdiff_component"
SPARK_MODULES = (PACKAGE / "engines" / "spark.py", PACKAGE / "spark.py")


def _pyspark_importable() -> bool:
    try:
        import pyspark.sql  # noqa: F401  # what spark.py imports
    except ImportError:
        return False
    return True


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    # None, not False, for every other path: False would override --ignore and the like.
    if collection_path in SPARK_MODULES and not _pyspark_importable():
        return True
    return None


def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    # Under pytest-xdist each worker starts its own Spark (a JVM, seconds and hundreds of MiB):
    # the tests that use Spark in this process (the `spark` fixture, spark.py's examples) all go
    # to one worker (--dist loadgroup). Those that start Spark in processes of their own go to
    # any worker.
    for item in items:
        if Path(item.path) in SPARK_MODULES or "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))
