"""Throw-away servers for the tests and benchmarks: a PostgreSQL server (initdb + pg_ctl) and a
one-node SLURM cluster (munged + slurmctld + slurmd), each in a temporary directory, on
loopback ports and private sockets, stopped and removed on exit whatever happened.

As root, PostgreSQL refuses to run: it runs as an unprivileged user (postgres, made by
Debian's package). SLURM runs as root (its daemons must, to start jobs as any user); its jobs
run as the user who submits them.

Each helper raises Unavailable (a reason to skip) when the programs are not installed, and
RuntimeError (a failure) when they are installed but do not start.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

STEP_TIMEOUT = 60  # seconds for any one server command (start, stop, init)


class Unavailable(Exception):
    """What a test needs is not installed here; str() says what."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    kw.setdefault("timeout", STEP_TIMEOUT)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


# ----------------------------------------------------------------------------- PostgreSQL


def postgres_bindir() -> Path:
    """Where initdb, pg_ctl and createdb are: beside pg_ctl on PATH (links resolved), else
    Debian's /usr/lib/postgresql/N/bin (the newest)."""
    found = shutil.which("pg_ctl")
    dirs = [os.path.dirname(os.path.realpath(found))] if found else []
    dirs += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for d in dirs:
        if all(os.access(os.path.join(d, p), os.X_OK) for p in ("initdb", "pg_ctl", "createdb")):
            return Path(d)
    raise Unavailable("PostgreSQL's initdb/pg_ctl are not installed (Debian: postgresql)")


@dataclass
class Postgres:
    host: str
    port: int
    user: str
    password: str
    database: str
    socket_dir: Path

    def url(self, with_password: bool = True, database: str | None = None) -> str:
        secret = f":{self.password}" if with_password else ""
        db = database or self.database
        return f"postgresql://{self.user}{secret}@{self.host}:{self.port}/{db}"


@contextlib.contextmanager
def postgres_server(
    password: str = "iotune-test-pw", max_connections: int = 50
) -> Iterator[Postgres]:
    """A PostgreSQL server on 127.0.0.1:<free port> with password (SCRAM) authentication for
    TCP clients and one database, "iotune", owned by the user "iotune"."""
    bindir = postgres_bindir()
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unavailable('no PostgreSQL driver: pip install "psycopg[binary]"') from None
    as_user: list[str] = []
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("root, and no postgres user to run the server as") from None
        as_user = ["runuser", "-u", "postgres", "--"]
    top = Path(tempfile.mkdtemp(prefix="iotune-pg-"))
    data, sock = top / "data", top / "sock"
    sock.mkdir()
    pwfile = top / "pw"
    pwfile.write_text(password + "\n")
    if owner is not None:
        for p in (top, sock, pwfile):
            os.chown(p, owner.pw_uid, owner.pw_gid)
    port = free_port()
    started = False
    try:
        _run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "iotune",
              "--pwfile", str(pwfile), "--auth-local=trust", "--auth-host=scram-sha-256",
              "-E", "UTF8", "--no-sync"])  # fmt: skip
        pwfile.unlink()
        options = (
            f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c synchronous_commit=off -c full_page_writes=off "
            f"-c max_connections={max_connections} -c shared_buffers=16MB"
        )
        _run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(top / "log"),
              "-o", options, "-w", "-t", "30", "start"])  # fmt: skip
        started = True
        _run([*as_user, str(bindir / "createdb"), "-h", str(sock), "-p", str(port),
              "-U", "iotune", "iotune"])  # fmt: skip
        yield Postgres("127.0.0.1", port, "iotune", password, "iotune", sock)
    finally:
        if started:
            with contextlib.suppress(Exception):
                _run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                      "-w", "-t", "30", "stop"])  # fmt: skip
        shutil.rmtree(top, ignore_errors=True)


# ----------------------------------------------------------------------------- SLURM


@dataclass
class Slurm:
    top: Path
    conf: Path
    node: str

    @property
    def env(self) -> dict[str, str]:
        """The environment of SLURM clients (sbatch, srun, squeue, scancel) of this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, timeout: float = 30, env: dict[str, str] | None = None) -> str:
        """A client command's output (RuntimeError if it fails); env: its environment (this
        cluster's SLURM_CONF is put in)."""
        full = {**(env or os.environ), "SLURM_CONF": str(self.conf)}
        return _run(list(cmd), env=full, timeout=timeout).stdout

    def queue(self) -> list[tuple[str, str]]:
        """[(job id, state)] of the jobs known to the controller (array tasks as ID_N)."""
        out = self.run("squeue", "-h", "-o", "%i %T %r")
        return [tuple(line.split()[:3]) for line in out.splitlines() if line.strip()]

    def wait_idle(self, timeout: float) -> None:
        """Waits until no job is pending or running; RuntimeError after timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.queue():
                return
            time.sleep(0.5)
        raise RuntimeError(f"jobs still queued after {timeout:g} s: {self.queue()}")

    def logs(self) -> str:
        parts = []
        for p in sorted((self.top / "log").glob("*.log")):
            parts.append(f"== {p.name}\n" + p.read_text(errors="replace")[-6000:])
        return "\n".join(parts)


SLURM_PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "scancel")


@contextlib.contextmanager
def slurm_cluster(cpus: int = 2) -> Iterator[Slurm]:
    """A one-node SLURM cluster of this host with `cpus` CPUs: munged with a fresh key, and
    slurmctld + slurmd from a generated slurm.conf, all in a temporary directory."""
    missing = [p for p in SLURM_PROGRAMS if not shutil.which(p) and not _sbin(p)]
    if missing:
        raise Unavailable(f"SLURM is not installed ({', '.join(missing)} missing; "
                          "Debian: slurmctld slurmd slurm-client munge)")  # fmt: skip
    if os.geteuid() != 0:
        raise Unavailable("a private SLURM cluster needs root (slurmd starts jobs as any user)")
    top = Path(tempfile.mkdtemp(prefix="iotune-slurm-"))
    os.chmod(top, 0o755)  # munged checks that its socket's directories are reachable
    for d in ("munge", "state", "spool", "log"):
        (top / d).mkdir()
    os.chmod(top / "munge", 0o755)
    node = socket.gethostname().split(".")[0]
    conf = top / "slurm.conf"
    key = top / "munge" / "munge.key"
    msock = top / "munge" / "munge.socket"
    conf.write_text(
        _SLURM_CONF.format(
            top=top, node=node, cpus=cpus, msock=msock, ctld_port=free_port(), d_port=free_port()
        )  # fmt: skip
    )
    (top / "plugstack.conf").write_text("")
    cluster = Slurm(top, conf, node)
    env = cluster.env
    pids = {"munged": top / "munge" / "munged.pid", "slurmctld": top / "slurmctld.pid",
            "slurmd": top / "slurmd.pid"}  # fmt: skip
    try:
        _run([_exe("mungekey"), "--create", "--keyfile", str(key)])
        os.chmod(key, 0o600)
        _run([_exe("munged"), "--force", f"--key-file={key}", f"--socket={msock}",
              f"--pid-file={pids['munged']}", f"--log-file={top / 'log' / 'munged.log'}",
              f"--seed-file={top / 'munge' / 'seed'}"])  # fmt: skip
        _run([_exe("slurmctld"), "-i"], env=env)  # -i: ignore (no) saved state
        _run([_exe("slurmd")], env=env)
        deadline = time.monotonic() + 30
        while True:
            state = _run(["sinfo", "-h", "-N", "-o", "%t"], env=env).stdout.strip()
            if state in ("idle", "mix", "alloc"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"node state {state!r} after 30 s\n{cluster.logs()}")
            time.sleep(0.3)
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            _run(["scancel", "--full", "--quiet", "-u", pwd.getpwuid(os.getuid()).pw_name],
                 env=env, timeout=10)  # fmt: skip
        _stop_daemons([pids["slurmd"], pids["slurmctld"], pids["munged"]])
        shutil.rmtree(top, ignore_errors=True)


def _sbin(name: str) -> str | None:
    for d in ("/usr/sbin", "/sbin", "/usr/local/sbin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def _exe(name: str) -> str:
    return shutil.which(name) or _sbin(name) or name


def _stop_daemons(pidfiles: list[Path], grace: float = 10.0) -> None:
    """SIGTERM to the daemons named by the pid files (all at once: each takes 1-2 s to end),
    SIGKILL to those still there after grace."""
    pids = []
    for f in pidfiles:
        try:
            pids.append(int(f.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.1)
        if not pids:
            return


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# how the test clusters schedule and account (the same for one node and for emulated hosts);
# KillWait as SLURM's default: a cancelled worker records its trial within it (docs/cluster.md), and
# 5 s was not always enough on a loaded CI host (the job ends as soon as its processes do)
SLURM_POLICY = """\
PlugStackConfig={top}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=30
MinJobAge=300
"""

_SLURM_CONF = (
    """\
# generated by the iotune tests: one node, nothing shared with any other cluster
ClusterName=iotunetest
SlurmctldHost={node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={msock}
StateSaveLocation={top}/state
SlurmdSpoolDir={top}/spool
SlurmctldPidFile={top}/slurmctld.pid
SlurmdPidFile={top}/slurmd.pid
SlurmctldLogFile={top}/log/slurmctld.log
SlurmdLogFile={top}/log/slurmd.log
"""
    + SLURM_POLICY
    + """\
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""
)
