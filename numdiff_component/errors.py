"""Exceptions raised by the core; only the CLI turns them into messages and exit codes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NoReturn


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


# C0 and C1 controls but tab and line breaks (read as spaces), and the bidirectional controls
# that reorder what is shown: an ANSI colour code or a reversed file name shows as escapes.
_CONTROL = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())  # as Python writes it: ESC is shown as \x1b, in any font
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    r"""``text`` as one line a terminal shows as it is: control characters (an ANSI colour
    code, a bidirectional override) as escapes, line breaks and runs of spaces as one space.

    >>> visible("\x1b[31mred\nline")
    '\\x1b[31mred line'
    """
    return " ".join(_CONTROL.sub(_escape, text).split())


class Stopped(BaseException):
    """SIGINT or SIGTERM (``args[0]``, the signal's number): unwinds like an exception, so that
    no partial file is left behind. Not a KeyboardInterrupt, which click would turn into exit
    code 1 (the gate's). Raised by `stop` from the CLI's signal handler."""


_stopped: list[int] = []  # the signal that stopped this process, once one came


def stop(signum: int) -> NoReturn:
    """Record ``signum`` as what stops this process, and raise `Stopped`."""
    _stopped[:] = [signum]
    raise Stopped(signum)


def check_stopped() -> None:
    """Raise `Stopped` again when a signal came. A signal handler's exception is lost where
    Python cannot raise it (a finalizer, a callback from a library); engines call this before
    each batch and before a results file is renamed complete, so that a stopped job never
    completes, and the CLI once the command returns, so that its code names the signal."""
    if _stopped:
        raise Stopped(_stopped[0])
