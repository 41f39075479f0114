"""The rule table (data/rules.tsv): reading, checking and evaluating it on insights.

A rule's condition is a conjunction of comparisons on named insights (iotune.insights), small
enough for the C runtime to evaluate the same way later:

    interface == hdf5 & layout == chunked|mixed & chunk_bytes_max > chunk_cache_bytes

- NAME OP VALUE, joined by " & "; OP: == != < <= > >=.
- VALUE: a number (an optional binary suffix K, M, G or T multiplies by 1024^n), another
  insight's name (compared with its value), or a word; a|b|c lists alternatives (== any of
  them, != none of them). Words compare as text, numbers as numbers.
- A comparison that involves an unknown insight (None) is neither true nor false: the rule does
  not fire, and the evaluation says which insights it lacked when all its other comparisons held.

A rule's settings are NAME=VALUE joined by ";"; VALUE @NAME takes an insight's value. Every
setting is checked against the parameter registry (data/params.tsv) when the table is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from iotune import insights, params

COLUMNS = ("code", "kind", "layer", "when", "settings", "io", "preserves", "online", "severity",
           "evidence", "source", "explain")  # fmt: skip
KINDS = ("setting", "keep", "finding")
RULE_LAYERS = ("hdf5", "mpiio", "fs", "app")
SEVERITIES = ("high", "medium", "low", "info")
OPS = ("==", "!=", "<=", ">=", "<", ">")
_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))([KMGT])?", re.ASCII)
_SHIFT = {"K": 10, "M": 20, "G": 30, "T": 40}
_TERM = re.compile(r"\s*([a-z_][a-z0-9_]*)\s*(==|!=|<=|>=|<|>)\s*(\S+)\s*", re.ASCII)
_CODE = re.compile(r"[A-Z]+-[0-9]+[a-z]?", re.ASCII)


class RuleError(ValueError):
    """A rule table that cannot be used: the message names the file, line and problem."""


@dataclass(frozen=True)
class Term:
    name: str
    op: str
    values: tuple[Any, ...]  # numbers, words, or ("insight", name) references

    def __str__(self) -> str:
        return f"{self.name} {self.op} {'|'.join(_show(v) for v in self.values)}"


@dataclass(frozen=True)
class Rule:
    code: str
    kind: str
    layer: str
    when: tuple[Term, ...]
    settings: tuple[tuple[str, str], ...]  # (name, value or "@insight")
    io: str
    preserves: bool
    online: bool
    severity: str
    evidence: str
    source: str
    explain: str

    @property
    def needs(self) -> tuple[str, ...]:
        """The insights the rule reads."""
        names = [t.name for t in self.when]
        names += [v[1] for t in self.when for v in t.values if isinstance(v, tuple)]
        names += [v[1:] for _, v in self.settings if v.startswith("@")]
        return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Outcome:
    """A rule evaluated on one set of insights: fired, or quiet; missing lists the unknown
    insights that kept it from deciding (all its known comparisons held)."""

    rule: Rule
    fired: bool
    missing: tuple[str, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()  # resolved values, normalised


def _show(v: Any) -> str:
    return v[1] if isinstance(v, tuple) else str(v)


def parse_value(text: str) -> Any:
    """A literal of a condition: int/float (with a binary suffix) or a word."""
    m = _NUMBER.fullmatch(text)
    if m:
        x = float(m.group(1)) * (1 << _SHIFT.get(m.group(2) or "", 0))
        return int(x) if x.is_integer() else x
    return text


def parse_condition(text: str) -> tuple[Term, ...]:
    """'a == x|y & b > 4M' -> Terms. Raises ValueError naming the part that is wrong."""
    terms = []
    for part in text.split("&"):
        m = _TERM.fullmatch(part)
        if not m:
            raise ValueError(f'"{part.strip()}" is not NAME OP VALUE')
        name, op, raw = m.groups()
        if name not in insights.BY_NAME:
            raise ValueError(f'"{name}" is not an insight (see iotune.insights.INSIGHTS)')
        alternatives = raw.split("|")
        if len(alternatives) > 1 and op not in ("==", "!="):
            raise ValueError(f'"{part.strip()}": alternatives only with == or !=')
        values = []
        for a in alternatives:
            v = parse_value(a)
            if isinstance(v, str) and v in insights.BY_NAME:
                v = ("insight", v)
            elif isinstance(v, str) and op not in ("==", "!="):
                raise ValueError(f'"{part.strip()}": {op} needs a number or an insight')
            elif isinstance(v, str) and insights.BY_NAME[name].words:
                if v not in insights.BY_NAME[name].words:  # a typo would never match
                    legal = "|".join(insights.BY_NAME[name].words)
                    raise ValueError(f'"{part.strip()}": {name} is one of {legal}')
            values.append(v)
        terms.append(Term(name, op, tuple(values)))
    return tuple(terms)


def _parse_settings(text: str) -> tuple[tuple[str, str], ...]:
    if text == "-":
        return ()
    out = []
    for item in text.split(";"):
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not value:
            raise ValueError(f'"{item}" is not NAME=VALUE')
        p = params.find(name)
        if p is None:
            raise ValueError(f'"{name}" is not a parameter of the registry (params.tsv)')
        if value.startswith("@"):
            ref = insights.BY_NAME.get(value[1:])
            if ref is None or ref.kind not in ("size", "count"):
                raise ValueError(f'"{value}" is not a size or count insight')
        else:
            value = p.normalise(value)  # ValueProblem (a ValueError) when not legal
        out.append((name, value))
    return tuple(out)


def _yes_no(text: str, what: str) -> bool:
    if text not in ("yes", "no"):
        raise ValueError(f"{what} must be yes or no, not {text!r}")
    return text == "yes"


def read_table(path: str | Path) -> tuple[Rule, ...]:
    """Reads and checks a rule table; RuleError names the line and the problem."""
    rules: list[Rule] = []
    header_seen = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.split("\t")
            if not header_seen:
                if tuple(cells) != COLUMNS:
                    raise RuleError(f"{path}:{number}: the header must be {' '.join(COLUMNS)}")
                header_seen = True
                continue
            try:
                rules.append(_row(cells))
            except ValueError as e:
                code = cells[0] if cells else "?"
                raise RuleError(f"{path}:{number}: {code}: {e}") from None
    codes = [r.code for r in rules]
    dup = {c for c in codes if codes.count(c) > 1}
    if dup:
        raise RuleError(f"{path}: duplicate codes {', '.join(sorted(dup))}")
    problem = guard_problem(rules)
    if problem:
        raise RuleError(f"{path}: {problem}")
    return tuple(rules)


def guard_problem(table: Sequence[Rule]) -> str:
    """What breaks params.tsv's guards (online `guarded: RULE`: the adaptive mode applies the
    parameter only where that rule's condition holds) in a rule table, or "": a rule that sets
    a guarded parameter online must be its guarding rule (another would apply it without the
    guard), and the guarding rule, where the table has it, must be an online setting rule that
    sets it."""
    for r in table:
        for name, _ in r.settings if r.online else ():
            guard = params.get(name).guard
            if guard and guard != r.code:
                return (f"{r.code}: online, but it sets {name}, which params.tsv applies online "
                        f"only under rule {guard}'s condition")  # fmt: skip
    for p in params.all_params():
        rule = next((r for r in table if r.code == p.guard), None) if p.guard else None
        if rule and not (rule.online and any(n == p.name for n, _ in rule.settings)):
            return (f"{rule.code}: params.tsv guards {p.name} by it, so it must be online and "
                    f"set {p.name}")  # fmt: skip
    return ""


def _row(cells: list[str]) -> Rule:
    if len(cells) != len(COLUMNS):
        raise ValueError(f"{len(cells)} columns, not {len(COLUMNS)}")
    row = dict(zip(COLUMNS, cells, strict=True))
    if not _CODE.fullmatch(row["code"]):
        raise ValueError(f"code {row['code']!r} is not like SIO-4a or IOT-12")
    for key, legal in (("kind", KINDS), ("layer", RULE_LAYERS), ("severity", SEVERITIES),
                       ("io", params.IO)):  # fmt: skip
        if row[key] not in legal:
            raise ValueError(f"{key} {row[key]!r} is not one of {', '.join(legal)}")
    rule = Rule(
        code=row["code"], kind=row["kind"], layer=row["layer"],
        when=parse_condition(row["when"]), settings=_parse_settings(row["settings"]),
        io=row["io"], preserves=_yes_no(row["preserves"], "preserves"),
        online=_yes_no(row["online"], "online"), severity=row["severity"],
        evidence=row["evidence"], source=row["source"], explain=row["explain"],
    )  # fmt: skip
    if rule.kind == "setting" and not rule.settings:
        raise ValueError("a setting rule without settings")
    if rule.kind == "finding" and rule.settings:
        raise ValueError("a finding proposes no settings")
    if rule.online and not rule.preserves:
        raise ValueError("only a rule that preserves data may be applied online")
    for name, _ in rule.settings if rule.online else ():
        why = params.get(name).offline_why
        if why:
            raise ValueError(f"online, but it sets {name}, which params.tsv says is never applied "
                             f"online ({why})")  # fmt: skip
    for name in re.findall(r"\{([a-z_0-9]+)\}", rule.evidence):
        if name not in insights.BY_NAME:
            raise ValueError(f"evidence names {{{name}}}, which is not an insight")
    return rule


def table_path() -> Path:
    return Path(str(resources.files("iotune") / "data" / "rules.tsv"))


@cache
def all_rules() -> tuple[Rule, ...]:
    """The packaged rule table."""
    return read_table(table_path())


# the I/O layer a file must have gone through for a rule of each layer (rules.tsv's layer
# column) to apply to it: a rule about MPI-IO hints says nothing of a file HDF5 wrote with its
# sec2 driver, nor an HDF5 rule of a raw MPI-IO file; fs and app rules apply to every file
LAYER_NEEDS = {"hdf5": "hdf5", "mpiio": "mpiio", "fs": None, "app": None}


def applies(rule: Rule, layers: Sequence[str] | None) -> bool:
    """Does a rule apply to files that went through these I/O layers (insights.LAYERS; None:
    the input does not say, and the rule's condition alone decides)?"""
    need = LAYER_NEEDS[rule.layer]
    return layers is None or need is None or need in layers


def runtime_rules(table: tuple[Rule, ...] | None = None) -> tuple[Rule, ...]:
    """The rules the C runtime holds (tools/gen_rules.py): those whose settings it can apply.
    A rule that sets an Open MPI MCA parameter (io: the MPI-IO component, chosen when MPI
    starts) is offline advice only, and the runtime's parameter table has no MCA parameters."""
    table = all_rules() if table is None else table
    return tuple(r for r in table if not any(params.get(n).is_mca for n, _ in r.settings))


# ----------------------------------------------------------------------------- evaluation


def _compare(left: Any, op: str, right: Any) -> bool:
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        a, b = float(left), float(right)
    else:
        a, b = str(left), str(right)
        if op not in ("==", "!="):
            return False
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _term(term: Term, values: Mapping[str, Any]) -> bool | None:
    """True, False, or None when an insight it reads is unknown."""
    left = values.get(term.name)
    if left is None:
        return None
    rights = []
    for v in term.values:
        if isinstance(v, tuple):
            v = values.get(v[1])
            if v is None:
                return None
        rights.append(v)
    if term.op == "==":
        return any(_compare(left, "==", r) for r in rights)
    if term.op == "!=":
        return all(_compare(left, "!=", r) for r in rights)
    return _compare(left, term.op, rights[0])


def _unknowns(term: Term, values: Mapping[str, Any]) -> list[str]:
    names = [term.name] + [v[1] for v in term.values if isinstance(v, tuple)]
    return [n for n in names if values.get(n) is None]


def resolve_settings(rule: Rule, values: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The rule's settings with @insight values filled in and normalised by the registry."""
    out = []
    for name, value in rule.settings:
        if value.startswith("@"):
            x = values.get(value[1:])
            if x is None:
                continue
            value = params.get(name).format(int(x))
        out.append((name, value))
    return tuple(out)


def evaluate(rule: Rule, values: Mapping[str, Any]) -> Outcome:
    """Evaluates one rule on insight values (name -> value or None)."""
    results = [_term(t, values) for t in rule.when]
    if any(r is False for r in results):
        return Outcome(rule, False)
    if any(r is None for r in results):
        missing = [n for t, r in zip(rule.when, results, strict=True) if r is None
                   for n in _unknowns(t, values)]  # fmt: skip
        return Outcome(rule, False, tuple(dict.fromkeys(missing)))
    return Outcome(rule, True, (), resolve_settings(rule, values))


def failing(rule: Rule, values: Mapping[str, Any]) -> tuple[Term, ...]:
    """The comparisons of a rule that are false on the insights (unknown ones are not false)."""
    return tuple(t for t in rule.when if _term(t, values) is False)


def evaluate_all(values: Mapping[str, Any], rules: tuple[Rule, ...] | None = None) -> list[Outcome]:
    """Every rule of the table evaluated on one set of insights, in the table's order."""
    return [evaluate(r, values) for r in (rules if rules is not None else all_rules())]


def format_evidence(rule: Rule, values: Mapping[str, Any]) -> str:
    """The rule's evidence text with each {insight} shown in its kind's units."""

    def show(m: re.Match[str]) -> str:
        return format_insight(m.group(1), values.get(m.group(1)))

    return re.sub(r"\{([a-z_0-9]+)\}", show, rule.evidence)


def format_insight(name: str, value: Any) -> str:
    """An insight's value for people: sizes in KiB/MiB, fractions in %, None as unknown."""
    if value is None:
        return "unknown"
    kind = insights.BY_NAME[name].kind if name in insights.BY_NAME else "word"
    if kind == "size":
        return _size(int(value))
    if kind == "fraction":
        return f"{100 * value:.0f} %"
    if kind == "ratio":
        return f"{value:.2f}"
    if kind == "seconds":
        return f"{value:.3g} s"
    return str(value)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            x = n / (1 << shift)
            return f"{x:.0f} {unit}" if x.is_integer() or x >= 100 else f"{x:.1f} {unit}"
    return f"{n} B"
