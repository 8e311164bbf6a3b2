"""The report next to the results: `builder` (`ReportBuilder`: what the report needs, gathered
batch by batch), `plots` (the two plots) and `render` (``summary.md`` and ``report.html`` from
the Jinja2 templates in ``templates/``).

``from numdiff_component.report import ReportBuilder`` works (docs/compare.md); the name is
looked up on first use, so that importing `render` does not import the builder.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def __getattr__(name: str) -> Any:
    if name == "ReportBuilder":
        return import_module("numdiff_component.report.builder").ReportBuilder
    raise AttributeError(f"module 'numdiff_component.report' has no attribute {name!r}")


__all__ = ["ReportBuilder"]
