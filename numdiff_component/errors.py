"""Exceptions raised by the core; only the CLI turns them into messages and exit codes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class NumdiffError(ValueError):
    """Bad input or options: the message is one line that says what is wrong and what is right."""


class OptionError(NumdiffError):
    """An option outside its domain."""


class InputError(NumdiffError):
    """A table that cannot be read or scored: missing, unreadable, wrong columns, empty."""


class TrackingError(RuntimeError):
    """The MLflow tracking server could not be reached or refused what was logged."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def missing_column(role: str, name: str, columns: Iterable[Any], hint: str = "") -> InputError:
    """The error for a column that is not there, listing the columns that are."""
    existing = ", ".join(repr(str(c)) for c in columns) or "none"
    return InputError(f"{role} column {name!r} not found; the columns are: {existing}{hint}")
