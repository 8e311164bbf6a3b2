"""pytest setup for the whole checkout (``testpaths`` holds the package for its doctests).

``numdiff_component/engines/spark.py`` and ``numdiff_component/spark.py`` need the ``spark``
extra: without pyspark their doctests are not collected (importing them would fail), as
``tests/engines/test_spark.py`` skips itself.
"""

from __future__ import annotations

from pathlib import Path

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

