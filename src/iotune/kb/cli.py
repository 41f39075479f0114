"""The `iotune kb` command: add, list, show, suggest, export, import (registered by
iotune.cli)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from iotune.cmdline import mpi_option

PROG = "iotune kb"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "kb",
        help="the knowledge base of tuned settings per I/O motif (add, list, suggest, ...)",
        description="Finished studies, filed under the motif signature of the application's "
        "I/O (docs/kb.md), with their recommended settings and verified speedup. `suggest` "
        "profiles a command once and writes the settings of the nearest stored motif. The "
        "knowledge base is --kb, else $IOTUNE_KB, else ~/.local/share/iotune/kb.sqlite (an "
        "SQLite file, or a database URL such as postgresql://...).",
    )
    p.add_argument(
        "--kb",
        metavar="PATH|URL",
        help="the knowledge base (default: $IOTUNE_KB, else ~/.local/share/iotune/kb.sqlite)",
    )
    ops = p.add_subparsers(dest="kb_cmd", metavar="ACTION")

    a = ops.add_parser("add", help="store a finished study (its output directory)")
    a.add_argument("study_dir", type=Path, metavar="DIR", help="a study's output directory")
    a.add_argument(
        "--profile",
        metavar="PROFILE.json",
        help="a profile of the application (default: DIR/kb-profile.json, else the study's "
        "command is run once with capture on)",
    )

    ls = ops.add_parser("list", help="list the stored studies")
    ls.add_argument("--json", action="store_true")

    sh = ops.add_parser("show", help="one stored study in full")
    sh.add_argument("id", help="its id (kb list) or the start of its uid")

    sg = ops.add_parser(
        "suggest",
        help="profile a command once; write the settings of the nearest stored motif",
        usage=f"{PROG} suggest [-o FILE] [--json] [--nearest] "
        "(-- COMMAND... | --profile PROFILE.json)",
    )
    sg.add_argument(
        "-o", "--out", default="iotune-kb.xml", help="control file (default %(default)s)"
    )
    sg.add_argument(
        "--profile",
        metavar="PROFILE.json",
        help="a saved profile instead of a run (default: none, the command is run once)",
    )
    sg.add_argument(
        "--nearest", type=int, default=5, help="entries shown as evidence (default %(default)s)"
    )
    sg.add_argument("--json", action="store_true")
    sg.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")

    ex = ops.add_parser("export", help="write every entry as JSON (to share with another site)")
    ex.add_argument("-o", "--out", default="-", help="file (default -: standard output)")

    im = ops.add_parser("import", help="add the entries of exported JSON files")
    im.add_argument("files", nargs="+", metavar="FILE.json")
    p.set_defaults(func=cmd_kb)


def _error(message: str) -> int:
    from iotune.outputs import printable_lines

    print(f"{PROG}: {printable_lines(message)}", file=sys.stderr)  # names and keys escaped
    return 1


def cmd_kb(args: argparse.Namespace) -> int:
    from iotune import kb

    if args.kb_cmd is None:
        return _error("give an action: add, list, show, suggest, export, import")
    try:  # the commands that only read create nothing (no directory, file or table)
        base = kb.KnowledgeBase(kb.resolve_url(args.kb), create=args.kb_cmd in WRITERS)
    except kb.KBError as e:
        return _error(str(e))
    try:
        return ACTIONS[args.kb_cmd](base, args)
    except kb.KBError as e:
        return _error(str(e))
    finally:
        base.close()


def _add(base, args) -> int:
    from iotune import kb
    from iotune.inputs import InputError, load_json
    from iotune.kb import capture, signature

    summary_path = args.study_dir / "summary.json"
    try:
        summary = load_json(summary_path, "study summary")
    except InputError as e:
        return _error(f"{e}: not a finished study's summary")
    if not isinstance(summary, dict):
        return _error(f"{summary_path}: not a finished study's summary (not an object)")
    profile = args.profile or args.study_dir / "kb-profile.json"
    try:
        if Path(profile).is_file():
            sig = signature.from_profile(
                profile, program=_program(summary), data_dirs=[summary.get("ran_in") or "."]
            )
        else:
            import shlex

            print(f"{PROG}: profiling the study's command once: {summary['command']}")
            sig = capture.profile_signature(
                shlex.split(summary["command"]), cwd=summary.get("ran_in") or None
            )
    except (ValueError, capture.CaptureFailed, KeyError) as e:
        return _error(f"no signature for {args.study_dir}: {e}")
    try:  # a summary from outside: its numbers and objects may be anything
        entry = kb.entry_from_summary(summary, sig, source=str(args.study_dir.resolve()))
    except (ValueError, TypeError, AttributeError) as e:
        return _error(f"{summary_path}: not a finished study's summary ({e})")
    rid, status = base.put(entry)  # checked in full (kb.validate) before it is stored
    said = {
        "stored": "stored",
        "updated": "updated (the study's entry replaced)",
        "already": "already stored",
        "kept": "not stored (a newer entry of this study is)",
    }
    print(f"{said[status]} as entry {rid} ({entry.uid}): {sig.words()}")
    return 0


def _program(summary: dict[str, Any]) -> str | None:
    from iotune import identity

    app = summary.get("app") or []
    if not app:
        return None
    program = identity.application(app)[0]
    if "/" in program and not os.path.isabs(program):
        program = os.path.join(summary.get("ran_in") or ".", program)
    return program


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def headline(e) -> str:
    """An entry's verified speedup as the study's headline gave it (iotune.verdict): "1.31x
    (90% interval 1.18-1.45x; faster in 9 of 9 pairs)"; the speedup alone for an entry of an
    older iotune."""
    from iotune import verdict

    if not e.settings:  # a study that kept the defaults: nothing was verified
        return "none (the defaults were kept)"
    if e.speedup is not None and e.verdict.get("pairs"):
        return verdict.figure({"speedup": e.speedup, **e.verdict})
    if e.speedup is None:  # e.g. the defaults won: no speedup was measured
        return "-"
    return _fmt(e.speedup, ".2f") + "x"


def _list(base, args) -> int:
    entries = base.entries()
    if args.json:
        print(json.dumps([e.to_json() | {"id": e.id} for e in entries], indent=1))
        return 0
    from iotune.cmdline import table as _table
    from iotune.outputs import printable

    rows = [
        [
            printable(cell)
            for cell in (
                str(e.id),
                e.created[:10],
                e.study or "-",
                e.signature.key,
                headline(e),
                _fmt(e.p_value, ".3g"),
                " ".join(f"{k}={v}" for k, v in sorted(e.settings.items())) or "(defaults)",
            )
        ]  # fmt: skip
        for e in entries
    ]
    print(_table(rows, ["id", "date", "study", "motif", "speedup", "p", "settings"]))
    if base.unreadable:
        print(f"{base.unreadable} unreadable entries skipped", file=sys.stderr)
    print(f"{len(entries)} entries in {base.where}", file=sys.stderr)
    return 0


def _show(base, args) -> int:
    e = base.get(args.id)
    if e is None:
        return _error(f"no entry {args.id!r} in {base.where}")
    print(json.dumps(e.to_json() | {"id": e.id}, indent=2))
    return 0


def _suggest(base, args) -> int:
    import tempfile

    from iotune import h5versions, kb
    from iotune import profile as prof
    from iotune.kb import capture, signature

    command = list(args.command)
    command = command[1:] if command[:1] == ["--"] else command
    with tempfile.TemporaryDirectory(prefix="iotune-suggest-") as tmp:
        kept = args.profile or os.path.join(tmp, "profile.json")
        try:
            if args.profile:
                sig = signature.from_profile(args.profile)
            elif command:
                sig = capture.profile_signature(command, cwd=os.getcwd(), keep=kept)
            else:
                return _error("give the command after -- (or --profile PROFILE.json)")
            # the release the run uses: its own defaults are no suggestion
            release = h5versions.profile_version(prof.load(kept).data)
        except (ValueError, capture.CaptureFailed) as e:
            return _error(f"no signature: {e}")
    s = kb.suggest(base.entries(), sig, args.nearest, hdf5=release)
    if s.settings and args.out != "-":
        write_with_evidence(args.out, s)
    if args.json:
        print(json.dumps(s.to_json() | {"control_file": args.out if s.settings else None},
                         indent=2))  # fmt: skip
    else:
        print("\n".join(evidence_lines(s)))
        if s.settings and args.out != "-":
            print(f"control file: {args.out} (iotune run --config {args.out} -- ...)")
    return 0


def _scale(sig) -> str:
    """ "2 ranks on 1 node" ("2 ranks" where the node count is not known)."""
    ranks, nodes = sig.scale.get("ranks"), sig.scale.get("nodes")
    on = f" on {nodes} node{'s' if nodes != 1 else ''}" if nodes else ""
    return f"{ranks} ranks{on}"


def evidence_lines(s) -> list[str]:
    lines = [f"motif {s.signature.key}: {s.signature.words()}",
             f"scale: {_scale(s.signature)}; platform: "
             + ", ".join(f"{k} {v}" for k, v in sorted(s.signature.platform.items()))]  # fmt: skip
    lines += [f"note: {n}" for n in s.notes]
    if s.settings:
        lines.append("suggested: " + " ".join(f"{k}={v}" for k, v in sorted(s.settings.items())))
    for m in s.evidence:
        e = m.entry
        same = "same motif" if m.same_motif else "another motif"
        other = f"; other platform: {', '.join(m.other_platform)}" if m.other_platform else ""
        found = (f"verified {headline(e)} p={_fmt(e.p_value, '.3g')} at {_scale(e.signature)}: "
                 + " ".join(f"{k}={v}" for k, v in sorted(e.settings.items()))
                 if e.settings else f"kept the defaults at {_scale(e.signature)}")  # fmt: skip
        lines.append(
            f"  evidence: entry {e.id} study {e.study or '-'} ({e.created[:10]}), distance "
            f"{m.distance:g} ({same}{other}), {found}"
        )
    return lines


def write_with_evidence(path: str, s) -> None:
    """The control file, with the evidence as an XML comment after the declaration."""
    from iotune import controlfile
    from iotune.outputs import write_output

    text = controlfile.render(s.settings)
    comment = "\n".join(evidence_lines(s)).replace("--", "- -")
    head, _, rest = text.partition("\n")
    write_output(path, f"{head}\n<!-- iotune kb suggest\n{comment}\n-->\n{rest}", "control file")


def _export(base, args) -> int:
    from iotune.kb import store

    text = json.dumps(store.export_json(base.entries()), indent=1) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        from iotune.outputs import write_output

        if write_output(args.out, text, "knowledge-base export"):  # a file, not a stream
            print(f"{len(base.entries())} entries written to {args.out}", file=sys.stderr)
    return 0


def _import(base, args) -> int:
    """Each file read as every file from outside is (iotune.inputs) and every one of its
    entries checked (kb.validate) before any is stored; a bad file is one message naming it
    and its entry, and the other files are still imported."""
    from iotune.inputs import InputError, load_json
    from iotune.kb import store

    status = 0
    for f in args.files:
        try:
            entries = store.import_json(load_json(f, "knowledge-base export", strict=True), f)
        except InputError as e:
            status = _error(f"{e}; nothing imported from it")
            continue
        added, same = base.add_all(entries)
        print(f"{f}: {added} entries added, {same} already there")
    return status


WRITERS = ("add", "import")  # the actions that may create the knowledge base
ACTIONS = {
    "add": _add,
    "list": _list,
    "show": _show,
    "suggest": _suggest,
    "export": _export,
    "import": _import,
}


# ----------------------------------------------------------------------------- iotune defaults


DEFAULT_PROXIES = "vpicio,vorpalio,gcrmio,haccio,iorio"  # iotune.defaults.PROXIES


def register_defaults(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "defaults",
        help="tune proxy kernels and combine them into site-wide ROMIO hints and HDF5 settings",
        description="Tune each proxy (built-in kernels at small sizes by default) with iotune "
        "tune, combine their recommendations into one site set that harms no proxy "
        "significantly, and report each proxy's default vs site vs individually tuned time "
        "(interleaved rounds). Writes OUT/romio-hints (ROMIO_HINTS format), OUT/site.xml, "
        "OUT/defaults.md, .json and .png (docs/kb.md).",
    )
    p.add_argument(
        "--proxies",
        default=DEFAULT_PROXIES,
        help="comma-separated built-in kernels (default: %(default)s)",
    )
    p.add_argument("--trials", type=int, default=12, help="trials per proxy study (default 12)")
    p.add_argument(
        "--verify-pairs",
        type=int,
        default=10,
        help="verification pairs (default 10; half as many again while tuned leads by --min-gain)",
    )
    p.add_argument(
        "--rounds", type=int, default=6, help="rounds of the final comparison (default 6)"
    )
    p.add_argument(
        "--warmup", type=int, default=1, help="discarded runs before each measured one (default 1)"
    )
    p.add_argument("--space", default="local", help="search space (default local)")
    p.add_argument("-n", "--nprocs", type=int, default=2, help="MPI ranks (default 2)")
    mpi_option(p, "the runtime's MPI family (default: $IOTUNE_MPI, else MPICH when built)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("iotune-results") / "defaults",
        help="output directory (default %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every study (default 0)")
    p.add_argument(
        "--kb",
        metavar="PATH|URL",
        help="knowledge base the proxy studies go to (default: $IOTUNE_KB, else "
        "~/.local/share/iotune/kb.sqlite)",
    )
    p.add_argument("--no-kb", action="store_true", help="do not file the proxy studies")
    p.add_argument(
        "--restart",
        action="store_true",
        help="discard the proxy studies' trials measured with other options and start them "
        "again (default: continue them, refused when measured otherwise)",
    )
    p.set_defaults(func=cmd_defaults)


def cmd_defaults(args: argparse.Namespace) -> int:
    import random

    from iotune import (
        defaults,
        h5versions,
        mpifamily,
        pairs,
        paths,
        space,
        study,
        tune_cli,
        tune_config,
    )

    names = [n for n in args.proxies.split(",") if n]
    unknown = [n for n in names if n not in defaults.PROXIES]
    if unknown:
        return _error_as("defaults", f"unknown proxies {unknown} (one of {list(defaults.PROXIES)})")
    problem = pairs.check_verify_pairs(args.verify_pairs)
    if problem:
        return _error_as("defaults", problem)
    try:
        sp = space.load(args.space)
    except space.SpaceError as e:
        return _error_as("defaults", str(e))
    proxies, opts = [], {}
    out = args.out.resolve()
    for name in names:
        try:
            app = [str(paths.find_kernel(name, args.mpi)), *defaults.PROXIES[name]]
            choice = mpifamily.choose(app, args.mpi)
        except paths.NotFound as e:
            return _error_as("defaults", str(e))
        run_dir = out / "proxies" / name
        (run_dir / "run").mkdir(parents=True, exist_ok=True)
        cfg = tune_config.TuneConfig(
            app=app,
            out=run_dir,
            space=mpifamily.space_for(  # what the MPI-IO component in force reads
                sp, choice.family, mpifamily.io_component(app, choice.family)[0]
            ),
            trials=args.trials,
            launcher=tune_cli._launcher(None, app, choice.launcher_build()),
            nprocs=args.nprocs,
            verify_pairs=args.verify_pairs,
            study_name=f"defaults-{name}",
            seed=args.seed,
            cwd=run_dir / "run",
            lib=choice.lib,
            allow_other_command=True,
            kb=args.kb,
            remember=not args.no_kb,
            restart=args.restart,
        )
        print(f"iotune defaults: tuning proxy {name}: {' '.join(cfg.command)}", flush=True)
        try:
            result = study.run(cfg, lambda m, n=name: print(f"  [{n}] {m}", flush=True))
        except study.StudyError as e:
            return _error_as("defaults", f"{name}: {e}")
        except Exception as e:  # a full disk, a read-only store: one message (storage.fault)
            from iotune import storage

            why = storage.fault(e, study.storage_url(cfg))
            if why is None:
                raise
            return _error_as("defaults", f"{name}: {why}")
        s = result.summary or {}
        head = s.get("headline") or {}  # measured on best.xml itself (iotune.verdict)
        proxies.append(
            defaults.Proxy(
                name,
                app,
                # a setting equal to the default of the HDF5 release the proxy ran on is none
                h5versions.without_defaults(
                    dict(s.get("recommended") or {}), h5versions.profile_version(s)
                )[0],
                head.get("speedup") if head.get("established") else None,
                s,
            )  # fmt: skip
        )
        o = tune_config.trial_options(cfg)
        o.lib = choice.lib
        opts[name] = o
    rng = random.Random(args.seed)
    chosen = defaults.choose_site(
        proxies,
        lambda p, settings: defaults.run_value(opts[p.name], settings),
        args.rounds,
        rng,
        log=lambda m: print(f"iotune defaults: {m}", flush=True),
        warmup=args.warmup,
    )
    meta = {"command": " ".join(sys.argv), "nprocs": args.nprocs, "trials": args.trials,
            "rounds": args.rounds, "warmup": args.warmup, "space": args.space}  # fmt: skip
    files = defaults.write_outputs(out, proxies, chosen, meta)
    print(files["report"].read_text())
    print("iotune defaults: " + ", ".join(f"{k} {v}" for k, v in files.items()))
    print(defaults.how_to_use(files))
    return 0


def _error_as(cmd: str, message: str) -> int:
    from iotune.outputs import printable_lines

    print(f"iotune {cmd}: {printable_lines(message)}", file=sys.stderr)
    return 2
