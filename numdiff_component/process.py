"""The process: how long things may take, what is cleaned up at exit, the forked child.

- `seconds_setting`: a number of seconds from the environment, within what a timer holds;
- `deadline`: a block that ends within some seconds (a timer signal, SIGALRM), raising `Late`;
- `at_exit_once` and `temporary_folder`: what is done when the process exits;
- `ForkedCall`: a call made in a forked child while this process goes on.

- the ``numdiff`` command's signals (`stop_on_signals`, `after_command`) and its exit
  (`end_process_at_exit`, `set_exit_code`).

Each use of SIGALRM, SIGINT and SIGTERM handlers, ``atexit``, ``fork`` and ``os._exit`` is here.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import math
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from numdiff_component.errors import InputError, Stopped, stop


def positive_setting(name: str, default: float) -> float:
    """A number > 0 from the environment variable ``name``, else ``default``; `InputError`
    when it is set to anything else."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{name} must be a positive number, got {text!r}")
    return value


def seconds_setting(name: str, default: float) -> float:
    """A number of seconds from the environment variable ``name``, else ``default``: > 0 and at
    most what a timer can hold (`threading.TIMEOUT_MAX`), else `InputError`."""
    text = os.environ.get(name, "").strip()
    try:
        seconds = float(text) if text else default
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= threading.TIMEOUT_MAX:
        raise InputError(
            f"{name} must be a number of seconds > 0 and at most "
            f"{threading.TIMEOUT_MAX:.0f}, got {text!r}"
        )
    return seconds


class Late(BaseException):
    """A deadline passed. Not an `Exception`: a library's ``except Exception`` (MLflow's
    retries, urllib's cleanup) must not swallow it."""


def on_main_thread() -> bool:
    """Whether this is the main thread, the only one a timer signal reaches."""
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deadline() -> Iterator[Callable[[float], None]]:
    """Yields ``arm(seconds)``: from then on, the block ends within ``seconds`` or raises
    `Late` (arming again moves the deadline). A timer signal, so that a blocking socket read
    is interrupted. Off the main thread no signal reaches the block: ``arm`` does nothing, and
    each read is bounded by its own timeout only (`on_main_thread` tells the caller)."""
    if not on_main_thread():
        yield lambda seconds: None
        return

    def expired(signum: int, frame: Any) -> None:
        raise Late

    def arm(seconds: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))  # 0 would disarm it

    previous = signal.signal(signal.SIGALRM, expired)
    try:
        yield arm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_done_at_exit: set[Callable[[], None]] = set()


def at_exit_once(call: Callable[[], None]) -> None:
    """Run ``call`` when the process exits (once, however often it is asked for)."""
    if call not in _done_at_exit:
        _done_at_exit.add(call)
        atexit.register(call)


def temporary_folder(prefix: str) -> str:
    """A new folder in the temporary folder, removed when the process exits."""
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


_STOPPING = {signal.SIGINT, signal.SIGTERM}


class ForkedCall:
    """``make()`` run at once in a forked child process (Linux), its files (name: content)
    taken by `result`.

    The child writes no file: it sends its result back through a pipe and exits, with
    the default action for SIGINT and SIGTERM (the parent's handlers clean up the parent's
    files, not the child's business). `result` calls ``make()`` here instead when the child
    gives nothing within ``timeout`` seconds, failed, or could not be forked, so the result and
    any error are those of the plain call. `close` (also on the way out of ``with``) kills and
    reaps the child whatever happened: a signal here leaves no process behind.
    """

    def __init__(self, make: Callable[[], dict[str, bytes]], timeout: float = 60.0) -> None:
        self._make = make
        self._deadline = time.monotonic() + timeout
        self._pid = self._fd = -1
        if sys.platform != "linux":  # fork is unsafe on macOS and missing on Windows
            return
        read, write = os.pipe()
        # Until the child has its own handlers, a SIGINT or SIGTERM would run the parent's in
        # it: they wait, blocked, and reach each process once it is ready for them.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        try:
            self._pid = os.fork()
        except OSError:  # no memory or process left: made here
            os.close(read)
            os.close(write)
        finally:
            if self._pid != 0:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if self._pid == 0:
            self._child(read, write, mask)
        elif self._pid > 0:
            os.close(write)
            self._fd = read

    def _child(self, read: int, write: int, mask: Iterable[int]) -> None:
        status = 1
        try:
            for signum in _STOPPING:
                signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(read)
            files = self._make()
            with open(write, "wb") as pipe:
                pipe.write(json.dumps({name: len(data) for name, data in files.items()}).encode())
                pipe.write(b"\n" + b"".join(files.values()))
            status = 0
        finally:
            os._exit(status)  # nothing of the parent's: no exit handler, no buffered output

    @property
    def pid(self) -> int:
        """The child's process id; -1 once it is reaped, or when none was forked."""
        return self._pid

    def result(self) -> dict[str, bytes]:
        """What ``make()`` returned, in the child or else here."""
        data = self._read() if self._fd >= 0 else b""
        self.close()
        header, _, contents = data.partition(b"\n")
        try:
            sizes: dict[str, int] = json.loads(header)
        except ValueError:  # nothing came: the child failed, was killed or did not answer
            return self._make()
        if sum(sizes.values()) != len(contents):  # cut short by a kill
            return self._make()
        files, start = {}, 0
        for name, size in sizes.items():
            files[name], start = contents[start : start + size], start + size
        return files

    def _read(self) -> bytes:
        chunks: list[bytes] = []
        while (left := self._deadline - time.monotonic()) > 0:
            if not select.select([self._fd], [], [], left)[0]:
                return b""  # no answer in time: the child is killed, and it is made here
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
        return b""

    def close(self) -> None:
        """Kill and reap the child, close the pipe (again: nothing happens)."""
        if self._pid > 0:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):  # reaped elsewhere
                os.kill(self._pid, signal.SIGKILL)  # a zombie until reaped: its pid stays its own
                os.waitpid(self._pid, 0)
            self._pid = -1
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ForkedCall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the command's signals and exit ---------------------------------------------------------------


def stop_on_signals() -> None:
    """SIGINT and SIGTERM stop the command: `errors.stop` raises `Stopped` in the main thread.
    The first signal decides: later ones are ignored, so that the cleanup it starts (removing
    a partial file) runs to its end, and the exit code and the message name the same signal."""
    for signum in _STOPPING:
        signal.signal(signum, _signalled)
    sys.unraisablehook = _unraisable


def _signalled(signum: int, frame: object) -> None:
    # A handler that does nothing, not SIG_IGN: one already on its way would be reported.
    for other in _STOPPING:
        signal.signal(other, _ignored)
    stop(signum)


def _ignored(signum: int, frame: object) -> None:
    pass


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    # A signal's exception lost in a finalizer or a callback is raised again by check_stopped:
    # not a second message. Anything else is said as Python says it.
    if not isinstance(unraisable.exc_value, Stopped):
        sys.__unraisablehook__(unraisable)


def after_command(stopped: bool) -> None:
    """Once the command is done (MLflow's and the temporary copies' clean-up at exit follow): a
    command ``stopped`` by a signal ignores later ones (also while the interpreter shuts down,
    when Python's own handlers are gone), so the code agrees with the message; else a signal
    ends the process at once with its code, not with a traceback from an exit handler."""
    try:
        for signum in _STOPPING:
            signal.signal(signum, signal.SIG_IGN if stopped else _stopped_at_exit)
    except Stopped as exc:  # one that came as the command ended, its handler run only now
        _stopped_at_exit(exc.args[0], None)


def _stopped_at_exit(signum: int, frame: object) -> None:
    os._exit(128 + signum)


_exit_code = 1  # what the process ends with: the command's code once it has one


def set_exit_code(code: int) -> None:
    """The code `end_process_at_exit` ends the process with."""
    global _exit_code
    _exit_code = code


def hold_closed_outputs() -> None:
    """A standard output or error that was closed (``>&-``, as cron may start a job) gets
    /dev/null on its descriptor, so that no file the job opens takes that number and receives
    what is meant for the terminal. Writing to a closed stdout still fails (opened for reading,
    as the shell says: "Bad file descriptor"), so the command's code tells that its output was
    lost; a closed stderr has nobody to tell, and takes what is written."""
    for fd, flags, name in ((1, os.O_RDONLY, "stdout"), (2, os.O_WRONLY, "stderr")):
        if getattr(sys, name) is not None:
            continue
        spare = os.open(os.devnull, flags)
        if spare != fd:
            os.dup2(spare, fd)
            os.close(spare)
        setattr(sys, name, open(fd, "w", closefd=False))  # noqa: SIM115 (the process's own)


def end_process_at_exit() -> None:
    """End the process in the last exit handler (the first registered), once the others have
    run, so that Python's finalization never starts: a pyarrow thread that lets go of a Python
    buffer while the interpreter finalizes aborts the process."""
    atexit.register(_end_process)


def _end_process() -> None:
    logging.shutdown()  # registered before this handler, so it would not run otherwise
    code = _exit_code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # never None: main gave a closed one a stream
        except OSError:  # output lost at the very end: not a success (120, as Python says it)
            code = code or 120
        except ValueError:  # closed
            pass
    os._exit(code)
