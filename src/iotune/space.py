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
are kept in their normalised text form. The value UNSET means "leave the setting out". A trial's
control file holds only the settings that differ from the stack's default.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from iotune import params

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


def _value_text(p: params.Param, raw: Any, where: str) -> str:
    if isinstance(raw, str) and raw.strip().lower() == UNSET:
        return UNSET
    try:
        return params.format_value(p, raw)
    except params.ValueProblem as e:
        raise SpaceError(f"{where}: {e}") from None


def _read_dim(name: str, table: Mapping[str, Any], where: str) -> Dim:
    p = params.find(name)
    if p is None:
        raise SpaceError(f"{where}: unknown parameter {name!r} (see `iotune check --list`)")
    unknown = set(table) - {"values", "ladder", "default"}
    if unknown:
        raise SpaceError(f"{where}: {name}: unknown key(s) {', '.join(sorted(unknown))}")
    if ("values" in table) == ("ladder" in table):
        raise SpaceError(f"{where}: {name}: give either values = [...] or ladder = [low, high]")
    if "ladder" in table:
        low_high = table["ladder"]
        if not isinstance(low_high, list) or len(low_high) != 2:
            raise SpaceError(f"{where}: {name}: ladder = [low, high]")
        if p.type not in ("size", "int"):
            raise SpaceError(f"{where}: {name}: a ladder needs a size or int parameter")
        low, high = (params.python_value(p, str(x)) for x in low_high)
        raw_values: list[Any] = ladder(low, high)
    else:
        raw_values = table["values"]
        if not isinstance(raw_values, list) or not raw_values:
            raise SpaceError(f"{where}: {name}: values must be a non-empty list")
    values = [_value_text(p, v, f"{where}: {name}") for v in raw_values]
    if "default" in table:
        default = _value_text(p, table["default"], f"{where}: {name}: default")
        if default not in values:
            values.append(default)
            if p.type in ("size", "int", "double") and UNSET not in values:
                values.sort(key=lambda v: params.python_value(p, v))
    else:
        default = UNSET
        if UNSET not in values:
            values.insert(0, UNSET)
    if len(set(values)) != len(values):
        raise SpaceError(f"{where}: {name}: repeated values")
    return Dim(p, tuple(values), default)


def parse(data: Mapping[str, Any], where: str = "space") -> Space:
    """A Space from the parsed TOML of a space file."""
    unknown = set(data) - {"name", "description", "params", "constraints", "guesses"}
    if unknown:
        raise SpaceError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    space = Space(name=str(data.get("name", where)), description=str(data.get("description", "")))
    tables = data.get("params", {})
    if not tables:
        raise SpaceError(f"{where}: no [params.NAME] tables: nothing to search")
    for name, table in tables.items():
        space.dims.append(_read_dim(name, table, where))
    searched = set(space.names())
    for c in data.get("constraints", []):
        if "tie" in c:
            name, to = c["tie"], c.get("to")
            params.get(name)
            if to not in searched:
                raise SpaceError(f"{where}: tie {name} to {to!r}: not a searched parameter")
            if name in searched:
                raise SpaceError(f"{where}: {name} is tied to {to}: do not search it as well")
            space.ties.append(Tie(name, to))
        elif "forbid" in c:
            when = {}
            for name, vals in c["forbid"].items():
                if name not in searched:
                    raise SpaceError(f"{where}: forbid: {name} is not a searched parameter")
                vals = vals if isinstance(vals, list) else [vals]
                p = params.get(name)
                when[name] = tuple(_value_text(p, v, f"{where}: forbid: {name}") for v in vals)
            space.forbids.append(Forbid(when))
        else:
            raise SpaceError(f"{where}: a constraint needs tie = ... or forbid = {{...}}")
    for g in data.get("guesses", []):
        settings = {}
        for name, value in g.get("settings", {}).items():
            if name not in searched:
                continue  # a guess may mention parameters some spaces do not search
            settings[name] = _value_text(params.get(name), value, f"{where}: guess {name}")
            if settings[name] not in space.dim(name).values:
                raise SpaceError(f"{where}: guess {g.get('name')}: {name}={value} not in values")
        if settings:
            space.guesses.append(Guess(str(g.get("name", "guess")), settings))
    return space


def preset_names() -> list[str]:
    files = resources.files(PRESETS_PACKAGE)
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".toml"))


MAX_SPACE_BYTES = 1024 * 1024  # a space file is a few kilobytes


def load(name_or_path: str | Path) -> Space:
    """A preset by name (local, sc13-lustre, gpfs, ...) or a TOML file by path."""
    text_path = str(name_or_path)
    if text_path in preset_names():
        ref = resources.files(PRESETS_PACKAGE) / f"{text_path}.toml"
        data = tomllib.loads(ref.read_text(encoding="utf-8"))
        where = f"preset {text_path}"
    else:
        path = Path(text_path)
        if not os.path.lexists(path):  # a FIFO, device or folder: read_text says what it is
            known = ", ".join(preset_names())
            raise SpaceError(f"no space {text_path!r}: neither a preset ({known}) nor a file")
        from iotune.inputs import InputError, read_text

        try:  # never blocks, bounded, binary refused
            data = tomllib.loads(read_text(path, "space", MAX_SPACE_BYTES))
        except InputError as e:
            raise SpaceError(str(e)) from None
        except tomllib.TOMLDecodeError as e:
            raise SpaceError(f"{path}: {e}") from None
        except ValueError:  # tomllib's int() of more than 4300 digits (not a TOMLDecodeError)
            raise SpaceError(
                f"{path}: the space holds a whole number of more than 4300 digits"
            ) from None
        except RecursionError:
            raise SpaceError(f"{path}: the space is nested too deeply") from None
        where = str(path)
    try:
        space = parse(data, where)
    except SpaceError:
        raise
    except (AttributeError, TypeError, KeyError, ValueError) as e:  # a value of the wrong kind
        detail = str(e) if not isinstance(e, (AttributeError, TypeError)) else ""
        why = detail or "a value is not of the kind the format has there (a table, list or text)"
        raise SpaceError(f"{where}: not a usable space: {why}") from None
    space.source = where
    return space


def describe(space: Space) -> Iterable[str]:
    """Lines describing a space for people."""
    yield f"space {space.name}: {len(space.dims)} parameters, {space.size():,} configurations"
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
