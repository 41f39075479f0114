"""`iotune advise`: the rule table (data/rules.tsv) applied offline to a run's insights.

advise() takes the insights of each file group (iotune.insights.from_profile(), or
iotune.advise.darshan.from_log() for a Darshan log) and returns an Advice: the findings (rules
that fired, with the numbers behind each and their source), the rules that could not be decided
because an insight was unknown (said, not guessed), and the settings of a control file that
applies the advice. Rendering is in iotune.advise.render.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from iotune import controlfile, h5versions, insights, mpifamily, params, rules

SEVERITY_ORDER = {s: i for i, s in enumerate(rules.SEVERITIES)}  # high first
DEFAULT_CONTROL_SEVERITY = "medium"


@dataclass
class Finding:
    """A rule that fired on one file group."""

    code: str
    kind: str
    layer: str
    severity: str
    group: str
    files: list[str]
    evidence: str
    source: str
    explain: str
    settings: list[tuple[str, str]]
    online: bool
    in_control_file: bool = False
    note: str = ""  # e.g. why a setting was left out of the control file
    assumed: list[str] = field(default_factory=list)  # what the input could not tell

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code, "kind": self.kind, "layer": self.layer,
            "severity": self.severity, "group": self.group, "files": self.files,
            "evidence": self.evidence, "source": self.source, "explain": self.explain,
            "settings": {k: v for k, v in self.settings}, "online": self.online,
            "in_control_file": self.in_control_file, "note": self.note,
            "assumed": self.assumed,
        }  # fmt: skip


@dataclass
class Undecided:
    """A rule that would have been evaluated further but lacked insights."""

    code: str
    group: str
    missing: list[str]
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "group": self.group, "missing": self.missing,
                "notes": self.notes}  # fmt: skip


@dataclass
class Advice:
    source: str  # what was analysed: a profile, a Darshan log
    kind: str  # "iotune profile" | "darshan log"
    groups: list[insights.Group]
    findings: list[Finding] = field(default_factory=list)
    undecided: list[Undecided] = field(default_factory=list)
    settings: list[controlfile.Setting] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)  # what the source cannot tell

    def control_text(self) -> str | None:
        return controlfile.render(self.settings) if self.settings else None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "iotune-advice", "version": 1, "insights_version": insights.VERSION,
            "source": self.source, "kind": self.kind,
            "groups": [g.to_json() for g in self.groups],
            "findings": [f.to_json() for f in self.findings],
            "undecided": [u.to_json() for u in self.undecided],
            "control_file": [s.to_json() for s in self.settings],
            "limits": self.limits,
        }  # fmt: skip


def advise(
    groups: Sequence[insights.Group],
    source: str,
    kind: str = "iotune profile",
    control_severity: str = DEFAULT_CONTROL_SEVERITY,
    table: tuple[rules.Rule, ...] | None = None,
    limits: Sequence[str] = (),
    hdf5: h5versions.Version | None = None,
) -> Advice:
    """Applies the rule table to every group; the control file gets the settings of the rules
    at or above control_severity ("high", "medium", "low" or "info"). hdf5: the HDF5 release the
    program ran with (the profile's hdf5_library): a setting equal to that release's own
    default is left out of the control file, said in the finding's note."""
    advice = Advice(source, kind, list(groups), limits=list(limits))
    threshold = SEVERITY_ORDER[control_severity]
    many = len([g for g in groups if g.get("interface")]) > 1
    chosen: dict[tuple[str | None, str], tuple[str, Finding]] = {}
    evaluate = _memoized(table)
    for g in groups:
        if not g.get("interface"):
            continue  # a file nothing was moved in (e.g. only opened)
        for out in evaluate(g.values):
            rule = out.rule
            if not rules.applies(rule, g.layers):
                continue  # e.g. an MPI-IO hint for a file with no MPI-IO layer (sec2 HDF5)
            if out.missing and unread_hints(rule.settings, g.get("mpiio_component")):
                continue  # a ROMIO hint OMPIO does not read: nothing to decide
            if out.missing:
                notes = [g.notes[n] for n in out.missing if n in g.notes]
                advice.undecided.append(Undecided(rule.code, g.pattern, list(out.missing), notes))
                continue
            if not out.fired:
                continue
            unread = unread_hints(out.settings, g.get("mpiio_component"))
            if unread:
                advice.limits.append(
                    f"{rule.code} on {g.pattern} not made: {', '.join(unread)} "
                    f"{'is a ROMIO hint' if len(unread) == 1 else 'are ROMIO hints'}, which "
                    "the run's MPI-IO component, Open MPI's OMPIO, does not read"
                )
                continue
            withdrawn = runtime_withdraws(out.settings, g.values)
            if withdrawn:
                advice.limits.append(f"{rule.code} on {g.pattern} not made: {withdrawn}")
                continue
            f = Finding(
                code=rule.code, kind=rule.kind, layer=rule.layer, severity=rule.severity,
                group=g.pattern, files=list(g.files),
                evidence=rules.format_evidence(rule, g.values), source=rule.source,
                explain=rule.explain, settings=list(out.settings), online=rule.online,
            )  # fmt: skip
            f.assumed = sorted({g.notes[n] for n in rule.needs
                                if str(g.notes.get(n, "")).startswith("assumed")})  # fmt: skip
            advice.findings.append(f)
            if not f.settings:
                continue
            if SEVERITY_ORDER[rule.severity] > threshold:
                f.note = f"severity {rule.severity}: not in the control file (--severity low)"
                continue
            f.in_control_file = True
            pattern = g.pattern if many else None
            for name, value in f.settings:
                key = (pattern, name)
                if key in chosen and chosen[key][0] != value:
                    f.note = f"{name}={value} conflicts with {chosen[key][1].code}; kept that one"
                    continue
                chosen.setdefault(key, (value, f))
    by_pattern = {g.pattern: g for g in groups}
    for (pattern, name), (value, finding) in chosen.items():
        own = by_pattern[finding.group].values.get(name) if finding.group in by_pattern else None
        dropped = _library_default(name, value, own, hdf5)
        if dropped:
            finding.note = dropped
            continue
        layer = params.get(name).layer
        advice.settings.append(controlfile.Setting(name, layer, value, file=pattern))
    advice.findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    return advice


def unread_hints(settings: Sequence[tuple[str, str]], component: Any) -> list[str]:
    """The ROMIO-only hints among a finding's settings when the run's MPI-IO component is
    OMPIO (which never reads them), unless the finding also switches the component to ROMIO
    (io=romio321): then they apply. [] otherwise."""
    if component != "ompio" or any(n == "io" and v.startswith("romio") for n, v in settings):
        return []
    return [n for n, _ in settings if mpifamily.romio_only(n)]


def runtime_withdraws(settings: Sequence[tuple[str, str]], values: dict[str, Any]) -> str:
    """Why the runtime would withdraw one of a finding's settings from these files, or "":
    fill_time=never where the application defined a fill value of its own (apply/fill_guard.c:
    elements it never writes would not read back as that value), as the HDF5 file shows."""
    if ("fill_time", "never") in settings and values.get("fill_value") == "own":
        return ("fill_time=never: the application defined a fill value of its own (h5dump: "
                "FILLVALUE VALUE), so the runtime withdraws fill time never there "
                "(apply/fill_guard.c: elements never written would not read back as that "
                "value); to skip the fill, set H5Pset_fill_time(H5D_FILL_TIME_NEVER) in the "
                "application where every element is written")  # fmt: skip
    return ""


def _library_default(name: str, value: str, own: Any, hdf5) -> str | None:
    """Why a setting is left out: it is the default of the program's HDF5 release, and the
    program did not run with a value of its own (an application's own transfer mode or chunk
    cache is what the setting overrides, whatever the library's default); else None."""
    dropped = h5versions.drop_defaults({name: value}, hdf5)[1] if hdf5 else []
    if not dropped:
        return None
    if own is not None:  # what the program ran with: its own value unless it is the default
        try:
            if params.normalise(name, str(own).lower()) != h5versions.default_for(name, hdf5):
                return None
        except ValueError:
            return None
    return dropped[0]


def _said(outcomes: list[rules.Outcome]) -> list[rules.Outcome]:
    """The outcomes advise() reports: the rules that fired or could not be decided."""
    return [out for out in outcomes if out.missing or out.fired]


def _memoized(table: tuple[rules.Rule, ...] | None):
    """rules.evaluate_all, once per distinct set of the values the table reads: a profile of
    10^6 files may hold as many groups, most of them alike (the evaluation cost more than the
    rest of advise)."""
    read = set()
    for rule in table if table is not None else rules.all_rules():
        for term in rule.when:
            read.add(term.name)
            read.update(v[1] for v in term.values if isinstance(v, tuple))
        read.update(value[1:] for _name, value in rule.settings if value.startswith("@"))
    names = sorted(read)
    seen: dict[tuple[Any, ...], list[rules.Outcome]] = {}

    def evaluate(values: dict[str, Any]) -> list[rules.Outcome]:
        key = tuple(map(values.get, names))
        try:
            return seen[key]
        except KeyError:
            seen[key] = out = _said(rules.evaluate_all(values, table))
            return out
        except TypeError:  # a value that cannot be a key (none of advise's own)
            return _said(rules.evaluate_all(values, table))

    return evaluate
