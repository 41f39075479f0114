"""SIGTERM, SIGINT and SIGHUP turned into one exception, for every command.

`iotune.cli.main` (and `python -m iotune.tune_cli`) install handlers() for the length of a
command: the first of these signals raises Interrupted (a KeyboardInterrupt, so every
`except KeyboardInterrupt` and `finally` that already cleans up after Ctrl-C does the same for
SIGTERM: the launched application's process group is stopped in iotune.launch, the trial's in
iotune.trial, temporary copies are removed), and the command exits with 128 + the signal's
number (SIGINT 130, SIGTERM 143, SIGHUP 129). Signals arriving after the first are noted but
raise nothing, so that the clean-up itself is not cut short (it is bounded: a process group
that does not stop on the signal is killed after a grace period).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A command stopped by a signal; signum says which."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_raised: list[int] = []  # the signal already turned into Interrupted, during handlers()
_installed: list[bool] = []  # one entry per handlers() in force


def _handler(signum: int, frame: object) -> None:
    if _raised:  # already stopping: let the clean-up finish
        return
    _raised.append(signum)
    raise Interrupted(signum)


def exit_status(exc: BaseException) -> int:
    """128 + the signal's number of an interruption (a plain KeyboardInterrupt: SIGINT)."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def await_own(seconds: float) -> None:
    """Gives a signal on its way to this process up to `seconds` to arrive (its handler then
    raises Interrupted here). A batch system's scancel signals the application's step and this
    tuner's separately: when the application ended by such a signal, the same signal is
    usually a few milliseconds from this process too."""
    deadline = time.monotonic() + seconds
    while not _raised and time.monotonic() < deadline:
        time.sleep(0.02)


def active() -> bool:
    """True while handlers() are in force: a signal then raises Interrupted."""
    return any(_installed)


def pending() -> int | None:
    """The signal that stopped this command, if one did (during handlers())."""
    return _raised[0] if _raised else None


@contextmanager
def handlers() -> Iterator[None]:
    """Installs the handlers (except for a signal this process was started with ignored, as
    `nohup` does for SIGHUP) and restores the previous ones afterwards."""
    previous = {}
    for sig in SIGNALS:
        try:
            old = signal.getsignal(sig)
            if old == signal.SIG_IGN:
                continue
            signal.signal(sig, _handler)
            previous[sig] = old
        except ValueError:  # not the main thread: leave signals alone
            continue
    _raised.clear()
    _installed.append(bool(previous))
    try:
        yield
    finally:
        _installed.pop()
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)
        _raised.clear()


def name(signum: int) -> str:
    """SIGTERM for 15 (the number itself for one Python does not know)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@contextmanager
def deferred() -> Iterator[None]:
    """Holds back SIGTERM, SIGINT and SIGHUP for the block (e.g. between creating a temporary
    file and noting its name for removal); one that came meanwhile is handled at its end."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    except (AttributeError, ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
