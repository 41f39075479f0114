"""The runtime's adaptive mode seen from Python: `iotune adapt -- LAUNCH...` (one run with
IOTUNE_MODE=adaptive and a profile), and the per-phase report that it and `iotune show` print
from a profile's "adaptive" section (docs/profile.md)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from iotune.cmdline import PROG, mpi_option, summary_options

# insights shown per phase (all of them are in the profile)
SHOWN = ("file_mode", "interface", "transfer_mode", "access_pattern", "io_mix",
         "transfer_size_median", "fs")  # fmt: skip


def _mb_s(x: float) -> str:
    return f"{x / 1e6:.1f}"


def _insight(name: str, v: Any) -> str:
    if v is None:
        return f"{name}=?"
    if name.startswith("transfer_size") and isinstance(v, (int, float)):
        return f"{name}={int(v) // 1024} KiB" if v >= 1024 else f"{name}={int(v)} B"
    return f"{name}={v}"


def _kb_left_out(x: Any) -> str:
    """A stored setting the runtime left out, with why: {name, value, why}; a bare name from a
    profile of an older runtime (chunk dimensions were then the only ones left out)."""
    from iotune.outputs import printable

    if not isinstance(x, dict):
        return f"{printable(x)} (the stored study's dataset shapes, not this program's)"
    return f"{printable(x.get('name'))}={printable(x.get('value'))} ({printable(x.get('why'))})"


def format_phases(data: Mapping[str, Any]) -> str:
    """What the adaptive mode did, phase by phase (rank 0's view), or '' without that section."""
    a = data.get("adaptive")
    if not a:
        return ""
    phases = a.get("phases") or []
    refused = not_in_effect(data)
    partly = partly_in_effect(data)
    guard = a.get("guard_ratio")
    lines = [f"adaptive mode: {len(phases)} phase(s) of rank 0's files (a file other ranks "
             "open without rank 0 is not listed: docs/profile.md, 'The adaptive section'), "
             f"guard below {guard} of the learning phase's bytes/s reverts"]  # fmt: skip
    if a.get("dropped_phases"):
        lines.append(f"  ({a['dropped_phases']} later phases not recorded)")
    extract = optimise = 0.0
    for p in phases:
        head = (f"  {p['file']}  [{p['class']} #{p['index']}, {p['role']}, {p['ranks']} rank(s)]"
                f"  {_mb_s(p['bytes_per_s'])} MB/s of I/O time")  # fmt: skip
        g = p.get("guard")
        if g and g.get("unlike") == "nonblocking":
            head += (", not compared with the learning phase (nonblocking transfers: the time "
                     "of their wait is not measured)")  # fmt: skip
        elif g and g.get("unlike"):
            head += f", not compared with the learning phase (this phase's I/O: {g['unlike']})"
        elif g:
            head += f", {g['ratio']:.2f}x the learning phase" + (" (slow)" if g.get("slow") else "")
        lines.append(head)
        ins = p.get("insights") or {}
        lines.append("    insights: " + ", ".join(_insight(k, ins.get(k)) for k in SHOWN))
        kb = p.get("kb")
        if kb:
            m = kb.get("match")
            lines.append(f"    knowledge base {kb['file']} ({kb.get('entries', 0)} entries): " + (
                f"entry of study {m.get('study') or '?'} (same motif, distance {m['distance']:g})"
                if m else kb.get("error") or "no entry of this motif"))  # fmt: skip
            for x in (m or {}).get("not_applied") or []:
                lines.append("    not applied from it: " + _kb_left_out(x))
        if p.get("fired"):
            lines.append("    rules fired: " + ", ".join(p["fired"]))
        if p.get("offline"):
            lines.append("    held, not applied (offline advice: iotune advise, iotune tune): "
                         + ", ".join(_offline(code) for code in p["offline"]))  # fmt: skip
        if p.get("applied"):
            mine = refused.get(str(p.get("file")), {})
            some = partly.get(str(p.get("file")), {})
            lines.append("    applied: " + ", ".join(
                f"{s['name']}={s['value']} ({s['rule']})" + (
                    f" NOT in effect: {mine[s['name']]}" if s["name"] in mine
                    else f" {some[s['name']]}" if s["name"] in some else "")
                for s in p["applied"]))  # fmt: skip
        if g and g.get("reverted"):
            lines.append("    reverted (slower than learning): " + ", ".join(g["reverted"]))
        o = p.get("overhead_s") or {}
        extract += o.get("extraction", 0.0)
        optimise += o.get("optimisation", 0.0)
    lines.append("  " + applied_per_file(phases, refused, partly))
    pred = a.get("prediction") or {}
    done = [x for x in pred.get("phases") or [] if x.get("accuracy") is not None]
    if done:
        mean = sum(x["accuracy"] for x in done) / len(done)
        symbols = pred["grammar"]["symbols"]
        lines.append(
            f"  prediction (Sequitur, rank 0): {len(done)} phase(s) predicted, mean "
            f"accuracy {mean:.0%}; grammar of {symbols} symbols"
        )
    lines.append(f"  overhead: prediction {pred.get('seconds', 0.0) * 1e3:.3f} ms, extraction "
                 f"{extract * 1e3:.3f} ms, optimisation {optimise * 1e3:.3f} ms")  # fmt: skip
    return "\n".join(lines)


def _offline(code: str) -> str:
    """A rule the mode may not apply by itself, with its settings."""
    from iotune import rules

    rule = next((r for r in rules.all_rules() if r.code == code), None)
    if rule is None or not rule.settings:
        return code
    return f"{code} " + ", ".join(f"{n}={v}" for n, v in rule.settings)


def _offline_reason(code: str) -> str:
    """Why the mode does not apply an offline-only rule by itself, from the rule's own text
    (its "Not applied online: ..." sentence, or the one that says it is offline advice)."""
    import re

    from iotune import rules

    rule = next((r for r in rules.all_rules() if r.code == code), None)
    text = rule.explain if rule else ""
    m = re.search(r"Not applied online: ([^.]*)\.", text)
    if m:
        return m.group(1)
    said = [x for x in re.split(r"(?<=\.) ", text) if "offline advice only" in x]
    if said:  # "It needs ..., so it is offline advice only." -> "it needs ..."
        x = re.sub(r",? so it is offline advice only\.?$", "", said[0]).rstrip(".")
        return x[:1].lower() + x[1:]
    return "the rule table marks it online no"


def _segments(phases: list[Mapping[str, Any]]) -> list[tuple[int, list[Mapping[str, Any]]]]:
    """Per learning phase (its position in phases), the later phases it stands for: those of
    its class after it, up to the class's next learning phase (a phase on more ranks than the
    learning phase's makes the class learn again), without the phases that moved no data or
    ran on fewer ranks than it (those run with the defaults, neither learned from nor judged)."""
    out = []
    for i, p in enumerate(phases):
        if p.get("role") != "learning":
            continue
        later = []
        for q in phases[i + 1 :]:
            if q.get("class") != p.get("class"):
                continue
            if q.get("role") == "learning":
                break
            if q.get("role") != "no data" and not q.get("fewer_ranks"):
                later.append(q)
        out.append((i, later))
    return out


def _ranks_clauses(phases: list[Mapping[str, Any]]) -> list[str]:
    """A class that learned again from a phase on more ranks, and the phases on fewer ranks than
    their class's learning phase (run with the defaults), in words."""
    out = []
    for p in phases:
        if p.get("relearned_from_ranks"):
            n = p["relearned_from_ranks"]
            out.append(f"{p.get('class')} learned again from {p.get('file')} on {p.get('ranks')} "
                       f"ranks (its earlier learning phase had {n} rank{'s' if n != 1 else ''}: "
                       "a file opened by fewer ranks does not stand for the class)")  # fmt: skip
    fewer: dict[str, list[str]] = {}
    for p in phases:
        if p.get("fewer_ranks") and p.get("role") != "no data":
            fewer.setdefault(str(p.get("class")), []).append(str(p.get("file")))
    for c, files in fewer.items():
        s = "s" if len(files) != 1 else ""
        out.append(f"{len(files)} phase{s} of {c} on fewer ranks than its learning phase ran "
                   f"with the defaults ({', '.join(files)})")  # fmt: skip
    return out


def _rule_io(code: str) -> str:
    """The accesses a rule is about (write, read, rw; rw for a code not in the table)."""
    from iotune import rules

    rule = next((r for r in rules.all_rules() if r.code == code), None)
    return rule.io if rule else "rw"


def _limits(phases: list[Mapping[str, Any]]) -> list[str]:
    """What the mode could not use: rules that held on a learning phase but are offline advice
    only, and settings for writes (reads) applied only to phases that wrote (read) nothing."""
    out = []
    with_data = [p for p in phases if p.get("role") != "no data"]
    offline = list(dict.fromkeys(c for p in with_data for c in p.get("offline") or []))
    for c in offline:
        held = sum(c in (p.get("offline") or []) for p in with_data)
        out.append(f"not applied: {_offline(c)} (offline advice, held on {held} of "
                   f"{len(with_data)} phases, proposed by iotune advise and iotune tune: "
                   f"{_offline_reason(c)})")  # fmt: skip
    out += _ranks_clauses(phases)
    out += considered(phases)
    idle: dict[str, set[str]] = {}
    for io, word in (("write", "wrote"), ("read", "read")):
        acted = set()
        for p in phases:
            mix = (p.get("insights") or {}).get("io_mix")
            for s in p.get("applied") or []:
                if _rule_io(str(s.get("rule"))) == io:
                    name = f"{s['name']}={s['value']}"
                    idle.setdefault(word, set()).add(name)
                    if mix in (io, "mixed"):
                        acted.add(name)
        left = sorted(idle.get(word, set()) - acted)
        if left:
            out.append(
                f"{', '.join(left)} reached no phase that {word} (the class's "
                f"{'writes' if io == 'write' else 'reads'} were in its learning phase)"
            )
    out += _reverted(phases)
    # class: [phases with data, of them writing, learning ones, writes no rule could reach (in
    # a learning phase, or on fewer ranks than it)]
    learned: dict[str, list[int]] = {}
    for p in phases:
        if p.get("role") != "no data":
            c = str(p.get("class"))
            wrote = (p.get("insights") or {}).get("io_mix") in ("write", "mixed")
            n = learned.setdefault(c, [0, 0, 0, 0])
            n[0] += 1
            n[1] += wrote
            n[2] += p.get("role") == "learning"
            n[3] += wrote and (p.get("role") == "learning" or bool(p.get("fewer_ranks")))
    classes = [c for c in dict.fromkeys(str(p.get("class")) for p in phases if p.get("applied"))
               if c in learned]  # fmt: skip
    if classes:
        out.append("each class learned from its first phase, which ran with the defaults: "
                   + ", ".join(f"{c} ({learned[c][2]} of {learned[c][0]} phases, "
                               f"{learned[c][1]} writing)"
                               + _writes_left(learned[c][1], learned[c][3])
                               for c in classes))  # fmt: skip
    return out


def _why_not(rule: Any, p: Mapping[str, Any]) -> str | None:
    """Why a setting rule that did not fire on learning phase p was not decided for it, from
    the phase's insights as the runtime evaluated them: undecided (an insight it reads was
    unknown: with the runtime's reason, the profile's unknown_why), or one comparison false
    while the others held; None when it was further off (two or more comparisons false)."""
    from iotune import rules

    values = p.get("insights") or {}
    outcome = rules.evaluate(rule, values)
    if outcome.fired:
        return None
    why = p.get("unknown_why") or {}
    if outcome.missing:
        return "undecided: " + ", ".join(
            f"{n} unknown" + (f": {why[n]}" if why.get(n) else "") for n in outcome.missing
        )
    false = rules.failing(rule, values)
    if len(false) != 1:
        return None
    t = false[0]
    return f"needs {t}, was {rules.format_insight(t.name, values.get(t.name))}"


def considered(phases: list[Mapping[str, Any]]) -> list[str]:
    """Per setting rule the mode considered on a class's learning phase and did not apply to
    the class's later phases, why: undecided or one condition false on the learning phase
    (_why_not; a rule held as offline advice on any phase is said by its own clause; a learning
    phase replaced before any phase it stood for, _segments, is passed over), or it fired and its
    setting reached none of the later phases: the file's ranks did not agree on the class's
    rules at their opens (every later phase ran with the defaults), or the control file or a
    knowledge-base entry set the parameter, or the value it takes from an insight was unknown.
    A rule the guard reverted is said by the guard's clause; a class without a later phase by
    "no phase recurred". One clause per reason: "not applied: CODE NAME=VALUE, ... (reason)"."""
    from iotune import rules

    table = [r for r in rules.runtime_rules() if r.kind == "setting" and r.settings]
    reasons: dict[str, str] = {}  # code: why (the first learning phase that gives one)
    held_offline = {str(c) for q in phases for c in q.get("offline") or []}
    segments = _segments(phases)
    for i, later in segments:
        p = phases[i]
        if not later and any(phases[j].get("class") == p.get("class") for j, _ in segments
                             if j > i):  # fmt: skip
            continue  # replaced before any phase it stood for: a later learning phase says
        reached = {str(s.get("rule")) for q in later for s in q.get("applied") or []}
        reverted = {str(c) for q in later for c in (q.get("guard") or {}).get("reverted") or []}
        fired = set(p.get("fired") or [])
        for r in table:
            if r.code in reasons or r.code in held_offline or r.code in reverted:
                continue
            if r.code not in fired:
                why = _why_not(r, p)
            elif not later or r.code in reached:
                why = None
            elif all(q.get("role") == "default" for q in later):
                why = ("fired; the ranks of the file did not agree on the class's rules at its "
                       "opens, so every later phase ran with the defaults")  # fmt: skip
            else:
                why = ("fired; its setting reached no later phase: the control file or a "
                       "knowledge-base entry sets it, or its value was unknown")  # fmt: skip
            if why:
                reasons[r.code] = why + (
                    "" if r.online else f"; offline advice only: {_offline_reason(r.code)}"
                )
    grouped: dict[str, list[str]] = {}  # undecided first, then fired, then a condition false
    order = ("undecided", "fired", "needs")
    for code, why in sorted(
        reasons.items(), key=lambda kv: order.index(kv[1].split()[0].rstrip(":;"))
    ):
        grouped.setdefault(why, []).append(_offline(code))
    return [f"not applied: {', '.join(codes)} ({why})" for why, codes in grouped.items()]


def _writes_left(writing: int, unreachable: int) -> str:
    """What learning from phases that wrote (and phases on fewer ranks than the learning phase)
    costs a write setting, in words."""
    if not unreachable or writing < 2:
        return ""
    return (f", so a write setting could reach at most {writing - unreachable} of its "
            f"{writing} writes")  # fmt: skip


def _reverted(phases: list[Mapping[str, Any]]) -> list[str]:
    """The guard's reverts, in words: which rules of which class, after which slow phases
    (their rate against the learning phase's), and how many later phases ran without them.
    Without this a revert shows only as fewer phases in "(3 of 16 phases)"."""
    out = []
    for i, p in enumerate(phases):
        codes = (p.get("guard") or {}).get("reverted") or []
        if not codes:
            continue
        cls = p.get("class")
        same = [q for q in phases[: i + 1] if q.get("class") == cls and q.get("guard")]
        slow = []  # the run of slow optimised phases that ended in this revert
        for q in reversed(same):
            if q["guard"].get("unlike"):
                continue  # not judged: it neither struck nor broke the run of strikes
            if not (q.get("guard") or {}).get("slow"):
                break
            slow.insert(0, q)
        later = sum(1 for q in phases[i + 1 :]
                    if q.get("class") == cls and q.get("role") != "no data")  # fmt: skip
        ratios = ", ".join(f"{float(q['guard'].get('ratio') or 0):.2f}x" for q in slow)
        names = ", ".join(f"phase {q.get('index')}" for q in slow)
        out.append(
            f"the guard reverted {', '.join(map(str, codes))} for {cls} after {names} ran "
            f"slower than its learning phase ({ratios} of its rate): its {later} later "
            f"phase{'s' if later != 1 else ''} ran without them (on a noisy machine a slow "
            "phase may be noise, not the setting)"
        )
    return out


# "name=value NOT applied: why [origin]", after "DSET: " or "FILE:DSET: " when it names a dataset
_REFUSED = re.compile(r"(?:.*: )?([a-z0-9_]+)=\S+ NOT applied: (.*?)(?: \[[^\]]*\])?")


def not_in_effect(data: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Per file, the settings the mode gave its phases that did not take effect, and why: the
    HDF5 ones HDF5's lists of the file do not hold (its `applied`, read back; the file's
    hdf5_notes say why: "fill_time=never NOT applied: the application defined a fill value",
    else no list took it: a phase that created no dataset), and any the runtime withdrew from
    the file (`withdrawn`: the call failed with it, or a hint would cost gigabytes) or that
    MPI-IO did not keep (`hint_effect` "no"). What the mode gave a phase is not always what
    took effect."""
    from iotune import params

    out: dict[str, dict[str, str]] = {}
    a = data.get("adaptive") or {}
    files = {str(f.get("name")): f for f in data.get("files") or [] if isinstance(f, Mapping)}
    for p in a.get("phases") or []:
        f = files.get(str(p.get("file")))
        if f is None:
            continue
        held = (f.get("applied") or {}).get("hdf5") or {}
        why = {}
        for note in f.get("hdf5_notes") or []:
            m = _REFUSED.fullmatch(str(note))
            if m:
                why.setdefault(m[1], m[2])
        gone = _withdrawn_or_dropped(f)
        for s in p.get("applied") or []:
            name = str(s.get("name"))
            param = params.find(name)
            if name in gone:
                out.setdefault(str(p.get("file")), {})[name] = gone[name]
            elif param is not None and param.layer == "hdf5" and name not in held:
                out.setdefault(str(p.get("file")), {})[name] = why.get(
                    name, "not in the file's HDF5 lists read back"
                )
    return out


def partly_in_effect(data: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Per file of a phase, the dataset settings that reached some of its datasets and not
    others, "applied to N of M datasets; not to DSET (why)" (profile.partly_applied): the
    file's `applied` lists a setting that reached one dataset of it."""
    from iotune.profile import partly_applied

    names = {str(p.get("file")) for p in (data.get("adaptive") or {}).get("phases") or []}
    return {
        name: partly
        for f in data.get("files") or []
        if isinstance(f, Mapping) and (name := str(f.get("name"))) in names
        if (partly := partly_applied(f))
    }


def _withdrawn_or_dropped(f: Mapping[str, Any]) -> dict[str, str]:
    """{setting: why} of what the runtime withdrew from file record f and of the hints MPI-IO
    did not keep there (hint_effect's in_effect "no")."""
    out: dict[str, str] = {}
    for w in f.get("withdrawn") or []:
        if isinstance(w, Mapping) and w.get("setting"):
            out.setdefault(str(w["setting"]), f"withdrawn: {w.get('reason') or 'refused'}")
    effect = f.get("hint_effect") or {}
    for name, e in effect.items() if isinstance(effect, Mapping) else ():
        if isinstance(e, Mapping) and e.get("in_effect") == "no":
            out.setdefault(str(name), str(e.get("reason") or "not kept by MPI-IO"))
    return out


def applied_per_file(phases: list[Mapping[str, Any]],
                     refused: Mapping[str, Mapping[str, str]] | None = None,
                     partly: Mapping[str, Mapping[str, str]] | None = None) -> str:  # fmt: skip
    """What the mode applied, file by file (each file once: its settings and in how many of
    its phases), or why it applied nothing; then what it could not use (_limits), and what it
    gave that did not take effect (refused: not_in_effect) or reached only some datasets of a
    file (partly: partly_in_effect, said beside the setting)."""
    per_file: dict[str, dict[str, str]] = {}
    counts: dict[str, list[int]] = {}  # file: [phases applied, phases with data]
    lost: dict[tuple[str, str], list[str]] = {}  # (setting, why): files
    for p in phases:
        f = str(p.get("file"))
        n = counts.setdefault(f, [0, 0])
        n[1] += p.get("role") != "no data"
        if p.get("applied"):
            n[0] += 1
            for s in p["applied"]:
                why = (refused or {}).get(f, {}).get(str(s["name"]))
                some = (partly or {}).get(f, {}).get(str(s["name"]))
                if why is None:
                    per_file.setdefault(f, {})[str(s["name"])] = str(s["value"]) + (
                        f" ({some})" if some else ""
                    )
                elif f not in lost.setdefault((f"{s['name']}={s['value']}", why), []):
                    lost[(f"{s['name']}={s['value']}", why)].append(f)
    limits = _limits(phases) + [
        f"not in effect: {setting} on {', '.join(files)} ({why})"
        for (setting, why), files in lost.items()
    ]
    tail = "; " + "; ".join(limits) if limits else ""
    if per_file:
        return (
            "applied per file: "
            + "; ".join(
                f"{f} ({counts[f][0]} of {counts[f][1]} phases): "
                + ", ".join(f"{k}={v}" for k, v in settings.items())
                for f, settings in per_file.items()
            )
            + tail
        )
    if not phases:  # phases are MPI-IO opens: a serial driver's file (sec2, h5py's default) is none
        return ("nothing applied: rank 0 opened no file through MPI-IO (the adaptive mode learns "
                "from MPI-IO opens only: an HDF5 file of the serial driver, a POSIX or stdio "
                "file is not a phase)" + tail)  # fmt: skip
    with_data: dict[str, int] = {}
    for p in phases:
        if p.get("role") != "no data":
            with_data[p.get("class", "?")] = with_data.get(p.get("class", "?"), 0) + 1
    if not any(n > 1 for n in with_data.values()):
        return ("nothing applied: no phase recurred (each class of file had one phase with "
                "data)" + tail)  # fmt: skip
    if not any(p.get("fired") for p in phases):
        return "nothing applied: no rule fired on a learning phase" + tail
    return (
        "nothing applied: the rules that fired set only what the control file (if any) or the "
        "knowledge base's entry sets, or the ranks of a file did not agree on them" + tail
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "adapt",
        help="run once with the runtime's adaptive mode and say what it did per phase",
        description="Launch the command once with IOTUNE_MODE=adaptive: the runtime learns "
        "each recurring I/O phase (a file's open to close; files numbered alike are one "
        "class) from its first occurrence, applies the online rules of the rule table to the "
        "later ones, and reverts a rule whose phase was slower. Prints the profile's summary "
        "and the phases. A control file (--config) wins over the rules.",
        usage=f"{PROG} adapt [--out FILE] [--config FILE] [--kb-file FILE] [--files] [--top N] "
        "[--mpi FAMILY] -- COMMAND [ARG...]",
    )
    summary_options(p)
    p.add_argument("--out", "-o", default="iotune-adapt.json", metavar="FILE",
                   help="where the profile goes (default: iotune-adapt.json)")  # fmt: skip
    p.add_argument(
        "--config", "-c", metavar="FILE", help="control file (wins over the rules; default: none)"
    )
    p.add_argument("--kb-file", metavar="FILE", help="an exported knowledge base (`iotune kb "
                   "export`): the stored settings of a learning phase's motif are applied to the "
                   "later phases (IOTUNE_ADAPT_KB); default: none")  # fmt: skip
    # the old name, which means a database in `tune` and `kb`: still works, and says so once
    p.add_argument("--kb", dest="kb_file", metavar="FILE", action=_OldKbName,
                   help=argparse.SUPPRESS)  # fmt: skip
    mpi_option(p, "preload the runtime of this MPI family (default: the command's MPI)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the launch command, after --")
    p.set_defaults(func=cmd_adapt, trace=False)


class _OldKbName(argparse.Action):
    """`adapt --kb FILE`, the old name of --kb-file: works as before and says once that it is
    deprecated (--kb names a knowledge-base database in `tune` and `kb`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if not getattr(namespace, "_old_kb_said", False):
            print(
                f"{PROG} adapt: --kb is deprecated: use --kb-file FILE (an exported knowledge "
                "base; --kb names a knowledge-base database in `iotune tune` and `iotune kb`)",
                file=sys.stderr,
            )
            namespace._old_kb_said = True
        setattr(namespace, self.dest, values)


def cmd_adapt(args: argparse.Namespace) -> int:
    from iotune import profile as prof
    from iotune import profile_cli

    os.environ["IOTUNE_MODE"] = "adaptive"  # the launched command inherits it
    if args.kb_file:
        if not os.path.isfile(args.kb_file):
            what = "not a regular file" if os.path.lexists(args.kb_file) else "no such file"
            if os.path.isdir(args.kb_file):
                what = "a directory"
            print(f"{PROG} adapt: --kb-file {args.kb_file}: {what}", file=sys.stderr)
            return 2
        os.environ["IOTUNE_ADAPT_KB"] = os.path.abspath(args.kb_file)
    status = profile_cli.cmd_profile(args)
    try:
        p = prof.load(os.path.abspath(args.out))
    except prof.ProfileError:
        return status
    print()
    print(format_phases(p.data) or "adaptive mode: no phase recorded")
    return status
