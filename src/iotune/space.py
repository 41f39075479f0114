"""Search spaces: which parameters a study varies, over which values, under which constraints.

A space is a TOML file (presets in iotune/spaces/, or the user's own):

    name = "local"
    description = "..."

    [params.cb_buffer_size]
    ladder = ["1M", "64M"]      # powers of two from 1 MiB to 64 MiB, in order
    default = "16M"             # what the stack uses when the setting is left out

    [params.transfer_mode]
    values = ["collective", "independent"]   # no default given: "unset" is added as a choice

    [[constraints]]             # cb_buffer_size is not searched: it follows striping_unit
    tie = "cb_buffer_size"
    to = "striping_unit"

    [[constraints]]             # configurations that are never tried
    forbid = { alignment = ["4194304,4194304"], chunk_size = ["1048576"] }

    [[guesses]]                 # rule-based starting points (tried early by the default strategy)
    name = "no fill values"
    settings = { fill_time = "never" }

Every parameter must be in the registry (iotune.params) and every value legal for it; values
are kept in their normalised text form. A default is one of the values (or on the ladder); a
forbid names searched parameters and values they take (or UNSET); a guess names known
parameters (those a space does not search are skipped) and values the space takes. Any other
content is one SpaceError naming the file, the line (key_lines()) and the key, e.g.
`s.toml:5: params.cb_nodes.default: 8 is not one of the values (1, 2, 4): ...`.

The value UNSET means "leave the setting out". A trial's
control file holds only the settings that differ from the stack's default.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from iotune import params
from iotune.outputs import printable

UNSET = "unset"
PRESETS_PACKAGE = "iotune.spaces"


class SpaceError(ValueError):
    """A search space that cannot be used; str() says what is wrong and where."""


@dataclass(frozen=True)
class Dim:
    """One searched parameter: its registry entry and its values (normalised texts, or UNSET)."""

    param: params.Param
    values: tuple[str, ...]
    default: str  # the value in force when the setting is left out (UNSET when unknown)

    @property
    def name(self) -> str:
        return self.param.name

    @property
    def layer(self) -> str:
        return self.param.layer

    @property
    def ordered(self) -> bool:
        """True for numeric ladders: the search may exploit the order of the values."""
        return UNSET not in self.values and self.param.type in ("size", "int", "double")

    def index(self, value: str) -> int:
        return self.values.index(value)


@dataclass(frozen=True)
class Tie:
    """A parameter that is not searched but takes another parameter's value."""

    name: str
    to: str


@dataclass(frozen=True)
class Forbid:
    """A combination never tried: all the listed parameters have one of their listed values."""

    when: Mapping[str, tuple[str, ...]]

    def matches(self, config: Mapping[str, str]) -> bool:
        return all(config.get(name, UNSET) in values for name, values in self.when.items())


@dataclass(frozen=True)
class Guess:
    """A rule-based starting point: a few settings, everything else at its default."""

    name: str
    settings: Mapping[str, str]


@dataclass
class Space:
    name: str
    description: str = ""
    dims: list[Dim] = field(default_factory=list)
    ties: list[Tie] = field(default_factory=list)
    forbids: list[Forbid] = field(default_factory=list)
    guesses: list[Guess] = field(default_factory=list)
    source: str | None = None

    # ------------------------------------------------------------------ views

    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        raise KeyError(name)

    def names(self) -> list[str]:
        return [d.name for d in self.dims]

    def layers(self) -> list[str]:
        """The layers this space touches, in registry order (hdf5, mpiio, fs)."""
        seen = {d.layer for d in self.dims} | {params.get(t.name).layer for t in self.ties}
        return [layer for layer in params.LAYERS if layer in seen]

    def size(self) -> int:
        """How many configurations the space holds (forbidden ones included)."""
        return math.prod(len(d.values) for d in self.dims)

    def distributions(self) -> dict[str, Any]:
        """Optuna distributions: ordered ladders as an integer index, the rest as categories."""
        from optuna.distributions import CategoricalDistribution, IntDistribution

        out: dict[str, Any] = {}
        for d in self.dims:
            if d.ordered:
                out[d.name] = IntDistribution(0, len(d.values) - 1)
            else:
                out[d.name] = CategoricalDistribution(d.values)
        return out

    # ------------------------------------------------------------------ conversions

    def config_from_trial_params(self, trial_params: Mapping[str, Any]) -> dict[str, str]:
        """The full configuration {name: value or UNSET} of a trial's Optuna parameters; a
        parameter missing from trial_params takes its default."""
        config = {}
        for d in self.dims:
            raw = trial_params.get(d.name)
            if raw is None:
                config[d.name] = d.default
            elif d.ordered:
                config[d.name] = d.values[int(raw)]
            else:
                config[d.name] = str(raw)
        for t in self.ties:
            config[t.name] = config.get(t.to, UNSET)
        return config

    def trial_params_for(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Optuna parameters of a configuration given as settings (missing ones: default).

        Raises SpaceError when a setting is not one of the space's values.
        """
        normal = self.normalise_settings(settings)
        out: dict[str, Any] = {}
        for d in self.dims:
            value = normal.get(d.name, d.default)
            if value not in d.values:
                raise SpaceError(f"{d.name}={value} is not one of the space's values")
            out[d.name] = d.index(value) if d.ordered else value
        return out

    def settings_of(self, config: Mapping[str, str]) -> dict[str, str]:
        """The control-file settings of a configuration: those not UNSET and not the default."""
        defaults = {d.name: d.default for d in self.dims}
        for t in self.ties:
            defaults[t.name] = defaults.get(t.to, UNSET)
        return {
            name: value
            for name, value in config.items()
            if value != UNSET and value != defaults.get(name, UNSET)
        }

    def default_config(self) -> dict[str, str]:
        return self.config_from_trial_params({})

    def forbidden(self, config: Mapping[str, str]) -> Forbid | None:
        for f in self.forbids:
            if f.matches(config):
                return f
        return None

    def normalise_settings(self, settings: Mapping[str, Any]) -> dict[str, str]:
        """Settings {name: value} with each value normalised through the registry."""
        out = {}
        for name, value in settings.items():
            if isinstance(value, str) and value == UNSET:
                out[name] = UNSET
            else:
                out[name] = params.format_value(params.get(name), value)
        return out


def config_key(settings: Mapping[str, str]) -> str:
    """A canonical text of a set of settings (for grouping repeated measurements)."""
    return ";".join(f"{k}={v}" for k, v in sorted(settings.items())) or "(defaults)"


def layer_of(name: str) -> str:
    return params.get(name).layer


# ----------------------------------------------------------------------------- reading


def ladder(low: int, high: int) -> list[int]:
    """Powers of two from low to high (both rounded to powers of two), in order."""
    if low < 1 or high < low:
        raise SpaceError(f"a ladder needs 1 <= low <= high, not {low}..{high}")
    a = 1 << (int(low) - 1).bit_length()
    out = []
    while a <= high:
        out.append(a)
        a <<= 1
    return out


def _key_text(key: tuple[str | int, ...]) -> str:
    """A key's path as TOML spells it: params.cb_nodes.default, constraints[1].forbid.io."""
    out = ""
    for k in key:
        if isinstance(k, int):
            out += f"[{k}]"
        else:
            bare = k and all(c.isascii() and (c.isalnum() or c in "_-") for c in k)
            out += ("." if out else "") + (k if bare else json.dumps(k))
    return out


_KEY_PART = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*""")


def _toml_key(s: str, pos: int) -> tuple[tuple[str, ...], int] | None:
    """A (dotted) TOML key at s[pos:]: its parts and where it ends; None when there is none."""
    parts = []
    while m := _KEY_PART.match(s, pos):
        parts.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
        if not s.startswith(".", pos):
            return tuple(parts), pos
        pos += 1
    return None


KEY_LINES_DEPTH = 16  # the enclosing tables key_lines records for a [table] header


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """The line where each table and key of a TOML text is first given (as a path such as
    ("params", "cb_nodes", "default") or ("constraints", 1, "forbid")): tomllib keeps no lines.
    Keys inside inline tables and arrays are not found (their parent's line says where)."""
    lines: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    arrays: dict[tuple[str | int, ...], int] = {}
    open_string = None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if open_string:  # inside a multi-line string: nothing here is a key
            open_string = None if open_string in s else open_string
            continue
        if s.startswith("[["):
            found = _toml_key(s, 2)
            if found:
                arrays[found[0]] = arrays.get(found[0], -1) + 1
                table = (*found[0], arrays[found[0]])
                lines.setdefault(found[0], n)
                lines.setdefault(table, n)
        elif s.startswith("["):
            found = _toml_key(s, 1)
            if found:
                table = found[0]
                # every enclosing table's line, to a bounded depth: a hostile [a.a.a...] of
                # 30,000 keys made this quadratic (3.5 GB); no space nests deeper than a few
                for i in range(1, min(len(table), KEY_LINES_DEPTH) + 1):
                    lines.setdefault(table[:i], n)
                lines.setdefault(table, n)
        elif (found := _toml_key(s, 0)) and s.startswith("=", found[1]):
            lines.setdefault((*table, *found[0]), n)
            rest = s[found[1] + 1 :]
            open_string = next((q for q in ('"""', "'''") if rest.count(q) % 2), None)
    return lines


class _Where:
    """Where a space comes from, to name the file, line and key of each problem."""

    def __init__(self, where: str, text: str | None):
        self.where = where
        self.lines = key_lines(text) if text is not None else {}

    def fail(self, key: tuple[str | int, ...], message: str) -> NoReturn:
        line = next((self.lines[key[:i]] for i in range(len(key), 0, -1) if key[:i] in self.lines),
                    None)  # fmt: skip
        at = self.where if line is None else f"{self.where}:{line}"
        raise SpaceError(f"{at}: {_key_text(key)}: {message}" if key else f"{at}: {message}")

    def table(self, value: Any, key: tuple[str | int, ...], shape: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key, f"must be a table ({shape}), not {_kind(value)}")
        return value

    def keys(self, table: dict[str, Any], key: tuple[str | int, ...], known: tuple[str, ...]):
        for k in table:
            if k not in known:
                self.fail((*key, k), f"unknown key (here: {', '.join(known)})")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return f"{type(value).__name__} {value!r}"[:60]


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _value_text(p: params.Param, raw: Any, w: _Where, key: tuple[str | int, ...]) -> str:
    if isinstance(raw, str) and raw.strip().lower() == UNSET:
        return UNSET
    if isinstance(raw, dict) or (isinstance(raw, list) and p.type not in ("pair", "dims")):
        w.fail(key, f"{_kind(raw)} is not a value of {p.name} ({p.type} parameter)")
    try:
        return params.format_value(p, raw)
    except params.ValueProblem as e:
        w.fail(key, str(e))
    except (ValueError, TypeError, OverflowError):
        w.fail(key, f"{_shown(raw)} is not a value of {p.name}")


def _not_among(value: Any, values: Iterable[str]) -> str:
    return f"{_shown(value)} is not one of the values ({', '.join(values)})"


def _read_dim(name: str, table: Any, w: _Where) -> Dim:
    key: tuple[str | int, ...] = ("params", name)
    table = w.table(table, key, f"[params.{name}] with values = [...] or ladder = [low, high]")
    p = params.find(name)
    if p is None:
        w.fail(key, "unknown parameter (see `iotune check --list`)")
    w.keys(table, key, ("values", "ladder", "default"))
    if ("values" in table) == ("ladder" in table):
        w.fail(key, "give either values = [...] or ladder = [low, high]")
    if "ladder" in table:
        low_high = table["ladder"]
        if not isinstance(low_high, list) or len(low_high) != 2:
            w.fail((*key, "ladder"), "must be [low, high]")
        if p.type not in ("size", "int"):
            w.fail((*key, "ladder"), f"a ladder needs a size or int parameter ({name} is {p.type})")
        bounds = [_value_text(p, x, w, (*key, "ladder", i)) for i, x in enumerate(low_high)]
        if UNSET in bounds:
            w.fail((*key, "ladder"), "its bounds are numbers, not unset")
        try:
            raw_values: list[Any] = ladder(*(int(b) for b in bounds))
        except SpaceError as e:
            w.fail((*key, "ladder"), str(e))
        values = [_value_text(p, v, w, (*key, "ladder")) for v in raw_values]
    else:
        raw_values = table["values"]
        if not isinstance(raw_values, list) or not raw_values:
            kind = "an empty list" if raw_values == [] else _kind(raw_values)
            w.fail((*key, "values"), f"must be a non-empty list, not {kind}")
        values = [_value_text(p, v, w, (*key, "values", i)) for i, v in enumerate(raw_values)]
    for i, v in enumerate(values):
        if v in values[:i]:
            w.fail((*key, "values"), f"{v} is listed twice (repeated values)")
    default = UNSET
    if "default" in table:
        default = _value_text(p, table["default"], w, (*key, "default"))
        if default != UNSET and default not in values:  # it was added silently: say so
            fix = "widen the ladder to it" if "ladder" in table else "list it in values too"
            w.fail((*key, "default"), f"{_not_among(table['default'], values)}: {fix}")
    if default == UNSET and UNSET not in values:  # "leave it out" is a choice
        values.insert(0, UNSET)
    return Dim(p, tuple(values), default)


COVER_WORK = 1_000_000  # steps spent on whether the forbids leave a configuration (then: yes)


class _GiveUp(Exception):
    pass


def _covered(values: Mapping[str, tuple[str, ...]], boxes: list[dict[str, set[str]]],
             work: list[int]) -> bool:  # fmt: skip
    """Whether the forbids (boxes: each parameter's forbidden values) cover every
    configuration: split on a parameter some forbid names, value by value."""
    if not boxes:
        return False
    if any(not b for b in boxes):
        return True  # a forbid with no condition left covers everything here
    work[0] -= len(boxes)
    if work[0] < 0:
        raise _GiveUp
    name = next(iter(boxes[0]))
    for v in values[name]:
        left = [b if name not in b else {k: s for k, s in b.items() if k != name}
                for b in boxes if name not in b or v in b[name]]  # fmt: skip
        if not _covered(values, left, work):
            return False
    return True


def _refuse_forbidding_everything(space: Space, w: _Where) -> None:
    """A space whose forbids leave no configuration to try is refused here: the tuner ran every
    trial into "forbidden" and said only that every trial failed."""
    values = {d.name: d.values for d in space.dims}
    boxes = [{k: set(v) for k, v in f.when.items()} for f in space.forbids]
    try:
        if _covered(values, boxes, [COVER_WORK]):
            w.fail(("constraints",), "the forbids together leave no configuration to try")
    except _GiveUp:
        pass  # too many forbids to tell quickly: the tuner says so if none is left


def parse(data: Mapping[str, Any], where: str = "space", text: str | None = None) -> Space:
    """A Space from the parsed TOML of a space file; text, the file's text, gives the line of
    each problem found (one SpaceError naming where, the line and the key)."""
    w = _Where(where, text)
    data = w.table(data, (), "a space file")
    w.keys(data, (), ("name", "description", "params", "constraints", "guesses"))
    for k in ("name", "description"):
        if not isinstance(data.get(k, ""), str):
            w.fail((k,), f"must be text, not {_kind(data[k])}")
    space = Space(name=data.get("name", where), description=data.get("description", ""))
    tables = data.get("params", {})
    tables = w.table(tables, ("params",), "[params.NAME] tables, one per searched parameter")
    if not tables:
        w.fail(("params",), "no [params.NAME] tables: nothing to search")
    for name, table in tables.items():
        space.dims.append(_read_dim(name, table, w))
    searched = set(space.names())
    constraints = data.get("constraints", [])
    if not isinstance(constraints, list):
        w.fail(("constraints",), f"must be [[constraints]] tables, not {_kind(constraints)}")
    for i, c in enumerate(constraints):
        key: tuple[str | int, ...] = ("constraints", i)
        c = w.table(c, key, "tie = NAME with to = NAME, or forbid = {NAME = [values]}")
        if "tie" in c:
            w.keys(c, key, ("tie", "to"))
            name, to = c["tie"], c.get("to")
            if not isinstance(name, str) or params.find(name) is None:
                w.fail((*key, "tie"), f"unknown parameter {_shown(name)}")
            if "to" not in c:
                w.fail((*key, "tie"), f"tie = {_shown(name)} needs to = a searched parameter")
            if not isinstance(to, str) or to not in searched:
                w.fail((*key, "to"), f"{_shown(to)} is not a searched parameter")
            if name in searched:
                w.fail((*key, "tie"), f"{name} is tied to {to}: do not search it as well")
            if any(t.name == name for t in space.ties):
                w.fail((*key, "tie"), f"{name} is tied twice")
            space.ties.append(Tie(name, to))
        elif "forbid" in c:
            w.keys(c, key, ("forbid",))
            key = (*key, "forbid")
            forbid = w.table(c["forbid"], key, "{NAME = [values], ...}")
            if not forbid:
                w.fail(key, "names no parameter: it would forbid everything")
            when = {}
            for name, vals in forbid.items():
                values = space.dim(name).values if name in searched else ()
                if not values:
                    w.fail((*key, name), "not a searched parameter")
                vals = vals if isinstance(vals, list) else [vals]
                if not vals:
                    w.fail((*key, name), "an empty list: the constraint could never apply")
                p = params.get(name)
                texts = [_value_text(p, v, w, (*key, name, j)) for j, v in enumerate(vals)]
                for v, t in zip(vals, texts, strict=True):
                    # a value never tried: a typo, or a space edited (unset: also a parameter
                    # left out of the search, e.g. one the HDF5 library lacks; see matches())
                    if t not in values and t != UNSET:
                        w.fail((*key, name), _not_among(v, values) + " searched: the "
                               "constraint would never apply to it")  # fmt: skip
                when[name] = tuple(texts)
            if all(set(space.dim(k).values) <= set(v) for k, v in when.items()):
                w.fail(key, "forbids every value of what it names: nothing is left to try")
            space.forbids.append(Forbid(when))
        else:
            w.fail(key, "a constraint needs tie = ... or forbid = {...}")
    _refuse_forbidding_everything(space, w)
    guesses = data.get("guesses", [])
    if not isinstance(guesses, list):
        w.fail(("guesses",), f"must be [[guesses]] tables, not {_kind(guesses)}")
    for i, g in enumerate(guesses):
        key = ("guesses", i)
        g = w.table(g, key, "name = ... with settings = {NAME = value}")
        w.keys(g, key, ("name", "settings"))
        gname = g.get("name", "guess")
        if not isinstance(gname, str):
            w.fail((*key, "name"), f"must be text, not {_kind(gname)}")
        given = w.table(g.get("settings", {}), (*key, "settings"), "{NAME = value, ...}")
        settings = {}
        for name, value in given.items():
            if params.find(name) is None:
                w.fail((*key, "settings", name), "unknown parameter (see `iotune check --list`)")
            if name not in searched:
                continue  # a guess may mention parameters some spaces do not search
            settings[name] = _value_text(params.get(name), value, w, (*key, "settings", name))
            if settings[name] not in space.dim(name).values:
                w.fail((*key, "settings", name), _not_among(value, space.dim(name).values))
        if settings:
            space.guesses.append(Guess(gname, settings))
    return space


def preset_names() -> list[str]:
    files = resources.files(PRESETS_PACKAGE)
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".toml"))


MAX_SPACE_BYTES = 1024 * 1024  # a space file is a few kilobytes


def _toml_error(path: object, e: tomllib.TOMLDecodeError) -> SpaceError:
    """tomllib's message with its line first, as every other message gives it."""
    m = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", str(e), re.S)
    if m:
        return SpaceError(f"{path}:{m[2]}: not valid TOML: {m[1]} (column {m[3]})")
    return SpaceError(f"{path}: not valid TOML: {e}")


def load(name_or_path: str | Path) -> Space:
    """A preset by name (local, sc13-lustre, gpfs, ...) or a TOML file by path."""
    text_path = str(name_or_path)
    if text_path in preset_names():
        ref = resources.files(PRESETS_PACKAGE) / f"{text_path}.toml"
        text = ref.read_text(encoding="utf-8")
        data = tomllib.loads(text)
        where = f"preset {text_path}"
    else:
        path = Path(text_path)
        if not os.path.lexists(path):  # a FIFO, device or folder: read_text says what it is
            known = ", ".join(preset_names())
            raise SpaceError(f"no space {text_path!r}: neither a preset ({known}) nor a file")
        from iotune.inputs import InputError, read_text

        try:  # never blocks, bounded, binary refused
            # one byte-order mark (editors on Windows), which tomllib refuses: read past it, as
            # iotune's other readers do
            text = read_text(path, "space", MAX_SPACE_BYTES).removeprefix("\ufeff")
            data = tomllib.loads(text)
        except InputError as e:
            raise SpaceError(str(e)) from None
        except tomllib.TOMLDecodeError as e:
            raise _toml_error(path, e) from None
        except ValueError:  # tomllib's int() of more than 4300 digits (not a TOMLDecodeError)
            raise SpaceError(
                f"{path}: the space holds a whole number of more than 4300 digits"
            ) from None
        except RecursionError:
            raise SpaceError(f"{path}: the space is nested too deeply") from None
        where = str(path)
    try:
        space = parse(data, where, text)
    except SpaceError:
        raise
    except (AttributeError, TypeError, KeyError, ValueError) as e:  # a safety net: parse() says
        detail = str(e) if not isinstance(e, (AttributeError, TypeError)) else ""  # every
        why = detail or "a value is not of the kind the format has there (a table, list or text)"
        raise SpaceError(f"{where}: not a usable space: {why}") from None  # problem it knows
    space.source = where
    return space


def describe(space: Space) -> Iterable[str]:
    """Lines describing a space for people."""
    # the name and guesses' names come from the file: a line break or an escape sequence in
    # them is shown escaped (a newline forged a line, ESC and BEL acted on the terminal)
    yield (f"space {printable(space.name)}: {len(space.dims)} parameters, "
           f"{space.size():,} configurations")  # fmt: skip
    for d in space.dims:
        shown = [
            params.format_size(int(v)) if d.param.type == "size" and v != UNSET else v
            for v in d.values
        ]
        yield f"  {d.name:<22} {d.layer:<6} default {d.default}: {' | '.join(shown)}"
    for t in space.ties:
        yield f"  {t.name:<22} follows {t.to}"
    for f in space.forbids:
        yield "  never: " + ", ".join(f"{k} in {{{', '.join(v)}}}" for k, v in f.when.items())
