"""The `iotune compare` command (registered by iotune.cli)."""

from __future__ import annotations

import argparse
import json
import sys

from iotune.compare.text import TOP

PROG = "iotune"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two profiles or two studies side by side",
        description="Compare two profiles (iotune profile, IOTUNE_PROFILE) or two studies (the "
        "output directory of iotune tune, or its summary.json): per layer and per data file "
        "the I/O time, bytes and calls of A and B and the ratio B/A, biggest differences "
        "first; the settings that differ; for studies the headline figures (verdict, speedup, "
        "medians) and the options that differ, and the per-layer and per-file comparison of "
        "their baseline runs (kb-profile.json) when both have one. Files are matched by name, "
        "then by name pattern (chk_0001.h5 and chk_0002.h5 are chk_*.h5); files matched by "
        "neither are listed. Exit status 0, or 2 when an input cannot be used.",
        usage=f"{PROG} compare [--json] [--html FILE] [--top N] A B",
    )
    p.add_argument("a", metavar="A", help="a profile (JSON), a study directory or summary.json")
    p.add_argument("b", metavar="B", help="the same kind as A")
    p.add_argument(
        "--json", action="store_true", help="print the comparison as JSON (default: text)"
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write the comparison as a self-contained HTML page (default: none)",
    )
    p.add_argument(
        "--top",
        type=int,
        default=TOP,
        metavar="N",
        help=f"data files shown in the text and HTML, biggest differences first (default {TOP}; "
        "0: all; --json has all)",
    )
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from iotune.compare import diff, page, read, text
    from iotune.outputs import write_output

    if args.top < 0:
        print(f"{PROG}: compare: --top must be 0 or more, not {args.top}", file=sys.stderr)
        return 2
    c = diff.compare(read.load(args.a), read.load(args.b))
    if args.html:
        write_output(args.html, page.render(c, args.top), "HTML page")
    if args.json:
        print(json.dumps(text.to_json(c), indent=2))
    else:
        print(text.render(c, args.top))
    return 0
