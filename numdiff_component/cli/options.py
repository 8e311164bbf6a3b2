"""The command line's shared parts: the exit codes, an error as one line and its exit code
(`fail`, `guarded`), the `Command` class whose boolean options are flags or take a value, and
the scoring options made from the option schema (`scoring_options`). Used by the ``numdiff``
commands in `cli.main` and `cli.compare`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

import click

from numdiff_component.options import OPTION_NAMES, PRESET_OPTIONS, SCHEMA, Options, OptionSpec

EXIT_GATE, EXIT_INPUT, EXIT_TRACKING = 1, 2, 3
F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    """Say ``message`` on stderr as one line, and exit with ``code``."""
    from numdiff_component.errors import visible

    with contextlib.suppress(OSError):  # stderr a closed pipe too: the code still tells
        click.echo(f"numdiff: error: {visible(message)}", err=True)  # no control byte to the tty
    sys.exit(code)


_OUTPUT_LOST = (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EBADF)
"""What writing to standard output fails with: /dev/full, a closed pipe, a closed stdout."""


def output_failed(exc: OSError) -> NoReturn:
    """Exit 2 with one line when standard output cannot be written (``exc``); raise ``exc``
    again when it is another error."""
    if exc.errno not in _OUTPUT_LOST:
        raise exc
    with contextlib.suppress(OSError, ValueError):  # no second error when Python flushes it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    fail(f"cannot write the output: {exc.strerror}", EXIT_INPUT)


def _traceback_asked() -> bool:
    return os.environ.get("NUMDIFF_TRACEBACK", "").strip().lower() in ("1", "true", "yes", "on")


def guarded(func: F) -> F:
    """Turn the core's typed errors into one line on stderr and an exit code."""

    @functools.wraps(func)  # keeps the click parameters declared below it
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from numdiff_component.errors import NumdiffError, TrackingError

        try:
            return func(*args, **kwargs)
        except (NumdiffError, TrackingError) as exc:
            code = EXIT_TRACKING if isinstance(exc, TrackingError) else EXIT_INPUT
            if code == EXIT_INPUT:
                record_failure(str(exc), code)
            if _traceback_asked():
                traceback.print_exc()
            fail(str(exc), code)

    return wrapper  # type: ignore[return-value]


def record_failure(message: str, code: int) -> None:
    """Under ``mlflow run``, tag the run with why the step failed (the README's table)."""
    if os.environ.get("MLFLOW_RUN_ID"):
        from numdiff_component.tracking import boundary as tracking

        tracking.record_failure(message, code)


class _Switch(click.Option):
    """A boolean option, written ``--x``, ``--no-x`` or ``--x=true|false`` (``--fractions=all``
    too). `Command` turns the first two into the third before click parses; the value is then
    read by `_option_value`."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        flag = self.opts[0]
        extra = "".join(f"|{c}" for c in self.choices)
        return f"{flag} / --no-{flag[2:]}, {flag}=[true|false{extra}]", record[1]

    def __init__(self, *args: Any, choices: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.choices = choices


def _click_option(spec: OptionSpec) -> Callable[[F], F]:
    # Every default is None, "not given": an option given explicitly overrides the preset's
    # value (SPEC §2.1), one not given takes it. The help shows the default without a preset.
    flag = "--" + (spec.flag or spec.name).replace("_", "-")
    shown = str(spec.default).lower() if spec.kind is bool else str(spec.default)
    if issubclass(spec.kind, tuple):  # a list option: its flag repeated, or a text with commas
        return click.option(
            flag, spec.name, multiple=True, metavar="TEXT", help=f"{spec.help} Repeatable."
        )
    if spec.kind is float:
        domain = spec.domain.removeprefix("a number ")
        return click.option(
            flag, type=float, default=None, help=f"{spec.help} ({domain})  [default: {shown}]"
        )
    help = f"{spec.help}  [default: {shown}]"
    if spec.kind is bool:
        return click.option(flag, cls=_Switch, choices=spec.choices, default=None, help=help)
    metavar = "[" + "|".join(spec.choices) + "]"
    return click.option(flag, default=None, metavar=metavar, help=help)


class Command(click.Command):
    """A command whose boolean options are flags (``--x``, ``--no-x``) or take a value
    (``--x=true``, as the MLproject passes them). Under ``mlflow run``, a usage error (a value
    click refuses, such as ``--fail-under abc``) is also recorded on the run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)  # then arguments, not options
        return super().parse_args(ctx, [_flag_value(arg) for arg in args[:end]] + args[end:])

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            record_failure(exc.format_message(), EXIT_INPUT)
            raise


_SWITCHES = {"--" + spec.name.replace("_", "-") for spec in SCHEMA if spec.kind is bool}
_SPECS = {spec.name: spec for spec in SCHEMA}
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def switch(flag: str, help: str) -> Callable[[F], F]:
    """A boolean option of a `Command` that is not a scoring option (``--fail-if-worse``):
    off by default; ``--x``, ``--no-x`` or ``--x=true|false``, as the scoring switches."""
    _SWITCHES.add(flag)
    return click.option(flag, cls=_Switch, type=click.BOOL, default=False, help=help)


def _flag_value(arg: str) -> str:
    if arg in _SWITCHES:
        return arg + "=true"
    if arg.startswith("--no-") and "--" + arg[5:] in _SWITCHES:
        return "--" + arg[5:] + "=false"
    return arg


def _option_value(spec: OptionSpec, value: Any) -> Any:
    """A value from the command line in the option's type (validated later, by `Options`)."""
    if spec.kind is bool and isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return value


def given_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The options given on the command line: not None, and for ``preset`` and the options a
    preset sets, not "" (the MLproject passes "" for "not given"); for a list option, not
    empty nor one "" (the MLproject's)."""
    return {
        name: _option_value(_SPECS[name], value)
        for name, value in values.items()
        if value not in (None, (), ("",)) and not (value == "" and name in _BLANK_IS_NOT_GIVEN)
    }


_BLANK_IS_NOT_GIVEN = {"preset", *PRESET_OPTIONS}


def scoring_options(func: F) -> F:
    """The scoring options (SPEC §2, §2.1), made from the option schema: the same on every
    command. The command receives them as one validated ``options`` argument (an `Options`):
    the preset's options, overridden by those given explicitly.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in OPTION_NAMES}
        return func(*args, options=Options.of(None, **given_options(values)), **kwargs)

    for spec in reversed(SCHEMA):
        wrapper = _click_option(spec)(wrapper)
    return wrapper  # type: ignore[return-value]
