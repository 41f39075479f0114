"""`iotune check`'s hints: the closest parameter or value for a misspelt one ("did you
mean"), and the right section for a parameter placed in the wrong one. Advice only: what a
control file means is decided by iotune.controlfile (and the runtime), never here."""

from __future__ import annotations

import difflib
from xml.parsers import expat

from iotune import controlfile, params
from iotune.outputs import capped


def closest(word: str, choices: list[str]) -> str | None:
    """The choice closest to word (case ignored), or None when none is close."""
    lowered = {c.lower(): c for c in choices}
    hit = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[hit[0]] if hit else None


def _elements(data: bytes) -> list[tuple[str | None, str, int, str]]:
    """(section, element, line, text) of every element two levels down (sections' children);
    [] when the file is not well-formed XML (the parser's own message says so)."""
    out: list[tuple[str | None, str, int, str]] = []
    stack: list[str] = []
    text: list[str] = []
    p = expat.ParserCreate()

    def start(name, attrs):
        stack.append(name)
        if len(stack) == 3:
            out.append((stack[1], name, p.CurrentLineNumber, ""))
            text.clear()

    def end(name):
        if len(stack) == 3 and out:
            sec, el, line, _ = out[-1]
            out[-1] = (sec, el, line, "".join(text).strip())
        stack.pop()

    def chars(s):
        if len(stack) == 3:
            text.append(s)

    p.StartElementHandler, p.EndElementHandler, p.CharacterDataHandler = start, end, chars
    try:
        p.Parse(data, True)
    except expat.ExpatError:
        return []
    return out


def hints(data: bytes, path: str) -> list[str]:
    """Lines of advice for a control file's text."""
    lines = []
    names = params.names()
    for section, element, line, value in _elements(data):
        where = f"hint: {path}:{line}: <{capped(element)}>"
        p = params.find(element)
        if p is None and element != controlfile.HINT:
            guess = closest(element, names)
            if guess:
                right = controlfile.SECTION_OF_LAYER[params.get(guess).layer]
                lines.append(f"{where}: did you mean <{guess}> (in <{right}>)?")
            continue
        if p is None:
            continue
        right = controlfile.SECTION_OF_LAYER[p.layer]
        if section != right:
            what = {"hdf5": "an HDF5", "mpiio": "an MPI-IO", "fs": "a file-system"}[p.layer]
            lines.append(f"{where}: {element} is {what} setting: it belongs in <{right}>")
        if p.choices and value and value.lower() not in (c.lower() for c in p.choices):
            guess = closest(value, list(p.choices))
            if guess:
                lines.append(f"{where}: did you mean {guess!r}? ({', '.join(p.choices)})")
    return lines
