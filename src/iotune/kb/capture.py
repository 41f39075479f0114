"""One profiled run of a command (capture and trace on, no settings), and its signature: what
`iotune kb suggest` starts from and what a finished study is filed under."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from iotune import identity, launch
from iotune.kb import signature


class CaptureFailed(RuntimeError):
    """The command did not give a profile; str() says why."""


def profile_signature(
    command: Sequence[str],
    *,
    lib: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 600.0,
    keep: str | os.PathLike[str] | None = None,
    extra_env: dict[str, str] | None = None,
) -> signature.Signature:
    """Runs command once with the runtime preloaded, capture and trace on (its output is
    swallowed) and returns the run's signature. keep: a path to keep the profile at."""
    tmp = Path(tempfile.mkdtemp(prefix="iotune-kb-"))
    out = tmp / "profile.json"
    extra = {
        **(extra_env or {}),
        "IOTUNE_PROFILE": str(out),
        "IOTUNE_TRACE": "1",
        "IOTUNE_SESSION": f"kb-{os.getpid()}-{time.time_ns():x}",
    }
    try:
        env = launch.runtime_env(None, lib=lib, extra=extra, command=command)
        try:
            proc = launch.run_captured(command, env=env, cwd=cwd, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CaptureFailed(f"no exit within {timeout:g} s") from None
        except OSError as e:
            raise CaptureFailed(f"cannot run {command[0]}: {e.strerror}") from None
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise CaptureFailed(f"the command failed (exit status {proc.returncode}): {tail}")
        if not out.is_file():
            raise CaptureFailed("the command wrote no profile (is it an MPI or HDF5 program?)")
        program = identity.application(list(command))[0]
        resolved = _program_path(program, cwd)
        sig = signature.from_profile(out, program=resolved, data_dirs=[cwd or os.getcwd()])
        if keep:  # the profile and its trace (the access pattern is read from it)
            shutil.copy(out, keep)
            trace = Path(str(out) + ".trace")
            if trace.is_dir():
                shutil.rmtree(str(keep) + ".trace", ignore_errors=True)
                shutil.copytree(trace, str(keep) + ".trace")
        return sig
    except ValueError as e:  # a profile that cannot be read, a run that moved no data
        raise CaptureFailed(str(e)) from None
    except ArithmeticError as e:  # an analysis that met a value it did not expect: the study
        # it would be filed for is done and must not fail for it (was a ZeroDivisionError)
        raise CaptureFailed(
            f"its profile could not be analysed ({type(e).__name__}: {e})"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _program_path(program: str, cwd: str | os.PathLike[str] | None) -> str:
    if "/" in program and not os.path.isabs(program):
        return str(Path(cwd or ".") / program)
    return program
