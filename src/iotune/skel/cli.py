"""`iotune skel ...`: the subcommands (thin: parse, call the library, print)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys


def _err(msg: str) -> int:
    print(f"iotune skel: {msg}", file=sys.stderr)
    return 1


def _load(args: argparse.Namespace):
    from iotune.skel import descriptor as dmod
    from iotune.skel import run as runmod

    d = dmod.load(args.descriptor)
    return runmod.apply_params(d, getattr(args, "params", None))


def cmd_from_profile(args: argparse.Namespace) -> int:
    from iotune.skel import descriptor as dmod
    from iotune.skel import from_profile as fp

    try:
        desc = fp.from_profile(args.profile, args.data_dir)
    except fp.FromProfileError as e:
        return _err(str(e))
    text = fp.to_yaml(desc, os.path.basename(args.profile))
    dmod.parse_text(text, args.out)  # what we write must read back
    from iotune.outputs import write_output

    to_file = write_output(args.out, text, "descriptor")  # else a stream such as /dev/stdout
    if to_file:
        print(f"descriptor written to {args.out}")
    for note in desc["notes"]:  # never into the descriptor written to standard output
        print(f"note: {note}", file=sys.stdout if to_file else sys.stderr)
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    from iotune.skel import run as runmod

    text = runmod.write_params(_load(args))
    if args.out == "-":
        sys.stdout.write(text)
    else:
        from iotune.outputs import write_output

        if write_output(args.out, text, "parameters"):  # a file, not a stream
            print(f"parameters written to {args.out}")
    return 0


def _generate(args: argparse.Namespace):
    from iotune.outputs import OutputError
    from iotune.skel import generate as gen

    d = _load(args)
    try:
        gen.generate(
            d,
            args.out,
            os.path.basename(args.descriptor),
            cc=args.cc,
            pkg=args.pkg,
            mpiexec=args.mpiexec,
            gaps=args.gaps,
        )
    except OSError as e:  # e.g. OUT is an existing file, or the disk is full: one line
        raise OutputError(f"{args.out}: cannot write the skeleton: {e.strerror or e}") from None
    return d


def cmd_generate(args: argparse.Namespace) -> int:
    _generate(args)
    print(f"skeleton written to {args.out} (make -C {args.out}; sh {args.out}/run-local.sh)")
    return 0


def _steps_of(extra: list[str]) -> int | None:
    """--steps N among the skeleton's own options, when given."""
    for i, a in enumerate(extra[:-1]):
        if a == "--steps" and extra[i + 1].isdigit():
            return int(extra[i + 1])
    return None


def _run_dir(args: argparse.Namespace, what: str) -> str:
    """Where the skeleton writes: --dir (made if missing), else a new directory under the
    source's (OUT/run-data-XXXX): never the working directory, where the application's own
    files may be (the runtime also refuses to replace a file no skeleton wrote)."""
    import tempfile

    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        return os.path.abspath(args.dir)
    return tempfile.mkdtemp(prefix=f"{what}-data-", dir=os.path.abspath(args.out))


def _gaps_of(extra: list[str], default: str) -> str:
    """--gaps MODE among the skeleton's own options (they override the generated default)."""
    mode = default
    for i, a in enumerate(extra[:-1]):
        if a == "--gaps":
            mode = extra[i + 1]
    return mode


def _preflight(
    d, ranks: int, extra: list[str], work: str, gaps: str = "busy", launches: int = 1
) -> None:
    from iotune.skel import cost

    c = cost.estimate(d, ranks, _steps_of(extra), gaps=_gaps_of(extra, gaps) != "off")
    cost.check_local(c, work, launches=launches)
    print(f"skel: {c.line()}, in {work}", flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    from iotune.skel import run as runmod

    d = _load(args)
    ranks = args.ranks or d.ranks
    _preflight(d, ranks, list(args.args), args.dir or args.out, args.gaps)
    d = _generate(args)
    print(f"skel: building the skeleton in {args.out}", flush=True)
    exe = runmod.build(args.out)
    work = _run_dir(args, "run")
    timing = os.path.abspath(args.timing or os.path.join(args.out, "timing.json"))
    extra = ["--timing", timing, "--method", args.method or d.method["name"], "--dir", work]
    print(f"skel: the skeleton writes into {work}", flush=True)
    if args.cleanup:
        extra.append("--cleanup")
    print(runmod.launch(exe, ranks, extra + list(args.args), args.mpiexec), end="")
    print(f"timing written to {timing}")
    if args.plot and runmod.plot(runmod.load_timing(timing), args.plot):  # not into a stream
        print(f"plot written to {args.plot}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from iotune.skel import run as runmod

    d = _load(args)
    ranks = args.ranks or d.ranks
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    launches = max(len(methods), 1) * max(args.repeats, 1)
    _preflight(d, ranks, list(args.args), args.dir or args.out, args.gaps, launches)
    d = _generate(args)
    print(f"skel: building the skeleton in {args.out}", flush=True)
    exe = runmod.build(args.out)
    work = _run_dir(args, "compare")
    original = shlex.split(args.original) if args.original else None
    results = runmod.compare(
        exe,
        ranks,
        methods,
        args.repeats,
        work,
        list(args.args),
        args.mpiexec,
        original=original,
        progress=lambda line: print(line, flush=True),
    )
    print(runmod.summarise(results))
    if original:
        print(runmod.verdict(results))
    if args.json:
        import json

        from iotune.outputs import write_output

        write_output(args.json, json.dumps(results, indent=1), "raw times")  # a file or stream
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from iotune.skel import run as runmod

    if runmod.plot(runmod.load_timing(args.timing), args.out):  # a file, not a stream
        print(f"plot written to {args.out}")
    return 0


def _toolchain() -> dict[str, str]:
    """The MPI tools of the default runtime's build (its iotune-mpi.json): a skeleton is built
    and run with the MPI the runtime can be preloaded into, wherever Debian's mpicc and mpiexec
    alternatives point. Plain names when no runtime is built."""
    from iotune import paths

    tools = {"cc": "mpicc", "pkg": "hdf5-mpich", "mpiexec": "mpiexec"}
    try:
        build = paths.find_build()
    except paths.NotFound:
        return tools
    if build.mpi.get("mpicc"):
        tools["cc"] = build.mpi["mpicc"]
    if build.family in ("mpich", "openmpi"):
        tools["pkg"] = f"hdf5-{build.family}"
    if build.mpi.get("mpiexec"):
        tools["mpiexec"] = shlex.join([build.mpi["mpiexec"], *build.mpi.get("preflags", [])])
    return tools


def _gen_args(p: argparse.ArgumentParser, out_default: str = "skeleton") -> None:
    tools = _toolchain()
    p.add_argument("descriptor", metavar="DESC.yaml")
    p.add_argument(
        "--params",
        metavar="FILE",
        help="parameter file (iotune skel params; default: none, the descriptor's values)",
    )
    p.add_argument(
        "--out",
        "-o",
        default=out_default,
        metavar="DIR",
        help="where the source goes (default %(default)s)",
    )
    p.add_argument("--cc", default=tools["cc"], help="MPI C compiler for the Makefile "
                   "(default: the runtime's MPI, %(default)s)")  # fmt: skip
    p.add_argument(
        "--pkg", default=tools["pkg"], help="pkg-config name of HDF5 (default %(default)s)"
    )
    p.add_argument("--mpiexec", default=tools["mpiexec"], help="MPI launcher (default %(default)s)")
    p.add_argument(
        "--gaps",
        choices=("busy", "sleep", "off"),
        default="busy",
        help="the time the application spent between its calls inside a step (writes' gap_s): "
        "spent as CPU work over the data just transferred (busy), slept, or left out (off); "
        "the skeleton's own --gaps overrides it at run time (default %(default)s)",
    )


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "skel",
        help="skeletons: stand-alone benchmarks that repeat an application's I/O",
        description="Derive a descriptor from a trace-mode profile, generate a skeleton (C, "
        "Makefile, job scripts), run it under several I/O methods (docs/skel.md).",
    )
    sub = p.add_subparsers(dest="skel_cmd", metavar="SUBCOMMAND", required=True)

    q = sub.add_parser("from-profile", help="descriptor from `iotune profile --trace`")
    q.add_argument("profile", metavar="PROFILE.json")
    q.add_argument(
        "--out",
        "-o",
        default="skel.yaml",
        metavar="FILE",
        help="the descriptor (default %(default)s)",
    )
    q.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where the application's files are (empty groups; types and chunks of older "
        "traces); default: none, the trace alone",
    )
    q.set_defaults(skel_func=cmd_from_profile)

    q = sub.add_parser("params", help="write the default parameter file of a descriptor")
    q.add_argument("descriptor", metavar="DESC.yaml")
    q.add_argument(
        "--out",
        "-o",
        default="skel-params.yaml",
        metavar="FILE",
        help="- for stdout (default %(default)s)",
    )
    q.set_defaults(skel_func=cmd_params)

    q = sub.add_parser("generate", help="write the skeleton's C source, Makefile, job scripts")
    _gen_args(q)
    q.set_defaults(skel_func=cmd_generate)

    for name, func, helptext in (
        ("run", cmd_run, "generate, build and run a skeleton once"),
        ("compare", cmd_compare, "run several methods, interleaved"),
    ):
        q = sub.add_parser(name, help=helptext)
        _gen_args(q)
        q.add_argument("--ranks", "-n", type=int, help="ranks (default: the descriptor's)")
        q.add_argument(
            "--dir",
            metavar="DIR",
            help="where the skeleton writes its files (default: a new OUT/*-data-* directory)",
        )
        if name == "run":
            q.add_argument(
                "--method",
                help="native, hdf5, mpiio, posix, aggregate (default: the descriptor's method)",
            )
            q.add_argument(
                "--timing", metavar="FILE", help="per-rank timing JSON (default OUT/timing.json)"
            )
            q.add_argument(
                "--plot",
                metavar="PNG",
                help="per-rank times, sorted (Skel Fig. 5); default: none, no plot",
            )
            q.add_argument("--cleanup", action="store_true", help="remove the files written")
        else:
            q.add_argument(
                "--methods",
                default="native,mpiio,posix,aggregate",
                help="the methods compared, comma separated (default %(default)s)",
            )
            q.add_argument(
                "--repeats",
                type=int,
                default=5,
                help="interleaved runs of each method (default %(default)s)",
            )
            q.add_argument(
                "--json", metavar="FILE", help="raw times per method (default: none, not written)"
            )
            q.add_argument(
                "--original",
                metavar="'CMD ARGS'",
                help="the application, run as `MPIEXEC -n RANKS CMD ARGS` in a directory of "
                "its own, interleaved with the skeleton: skeleton vs original, ratio, verdict "
                "(default: none, the skeleton's methods only)",
            )
        q.add_argument(
            "--args",
            dest="args",
            type=shlex.split,
            default=[],
            metavar="'OPTS'",
            help="skeleton options, e.g. --args '--aggregators 2' (default: none)",
        )
        q.set_defaults(skel_func=func)

    q = sub.add_parser("plot", help="per-rank times of a timing JSON as PNG")
    q.add_argument("timing", metavar="TIMING.json")
    q.add_argument(
        "--out", "-o", default="skel-ranks.png", metavar="PNG", help="(default %(default)s)"
    )
    q.set_defaults(skel_func=cmd_plot)

    p.set_defaults(func=_dispatch)
    return p


def _dispatch(args: argparse.Namespace) -> int:
    from iotune.skel import cost
    from iotune.skel import descriptor as dmod
    from iotune.skel import run as runmod

    try:
        return args.skel_func(args)
    except dmod.DescriptorError as e:
        print(str(e), file=sys.stderr)
        return 2
    except runmod.RunError as e:
        return _err(str(e))
    except cost.CostError as e:
        return _err(f"not run: {e}")
