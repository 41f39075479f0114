#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/<harness>/): the project's own control
files and vectors, plus hostile inputs made from the parameter registry. Files named fuzz-*
(inputs a fuzzer found that reach code the seeds do not, added with libFuzzer's -merge=1) are
kept. Run it again after a
change of the registry or the vectors; the files are checked in, so CI needs no Python here.
  tests/fuzz/seeds.py"""
# ruff: noqa: E501 (the inputs are long literals, easier to read on one line)

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "corpus"
sys.path.insert(0, str(ROOT / "tools"))
from tsv import rows  # noqa: E402  (tools/tsv.py: the registry table's reader)


def params():
    return [p for p in rows(ROOT / "src/iotune/data/params.tsv") if p["target"] != "mca"]


def section(p):
    return {"hdf5": "High_Level_IO_Library", "mpiio": "Middleware_Layer"}.get(
        p["layer"], "Parallel_File_System"
    )


def doc(body, sec="Middleware_Layer"):
    return f'<?xml version="1.0"?>\n<Parameters>\n  <{sec}>\n{body}\n  </{sec}>\n</Parameters>\n'


def edge_values(p):
    """Values at and just outside the registry's bounds, and the usual hostile ones."""
    t, lo, hi = p["type"], p["min"], p["max"]
    vals = ["", " ", "-", "0x10", "1e3", "nan", "inf", "99999999999999999999999999"]
    if t in ("size", "int", "pair", "dims") and lo != "-":
        lo, hi = int(lo), int(hi)
        nums = [lo, hi, lo - 1, hi + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]
        if t == "size":
            vals += [str(n) for n in nums] + ["8388607T", "8388608T", "4G", "4GiB", "1kb", "1 K"]
        elif t == "int":
            vals += [str(n) for n in nums] + ["+1", "-0", "+"]
        elif t == "pair":
            vals += [
                f"{lo},1",
                f"{hi},{hi}",
                f"{hi + 1},1",
                f"{lo},0",
                "1,2,3",
                ",",
                "1,",
                "4G , 4G",
            ]
        else:
            vals += [
                ",".join([str(hi)] * 32),
                ",".join(["1"] * 33),
                f"{lo - 1}",
                f"{hi + 1}",
                "1,,2",
            ]
    elif t == "double":
        vals += [
            "0",
            "1",
            "-0.000001",
            "1.000001",
            "1e-400",
            "4.9e-324",
            "0.0e-400",
            ".5",
            "1.",
            "1e400",
        ]
    elif t == "bool":
        vals += ["true", "FALSE", "Yes", "off", "1", "2", "truee"]
    elif t == "enum":
        choices = p["choices"].split("|")
        vals += choices + [c.upper() for c in choices] + [choices[0] + "x"]
    elif t == "string":
        vals += ["*:*", "a" * 255, "a" * 256, "é" * 127 + "a", "é" * 128, "a\nb", "a\rb", "\t x \t"]
    return vals


def controlfile():
    out = {}
    for src in [ROOT / "docs/examples/full.xml", *sorted((ROOT / "tests/data").glob("*.xml"))]:
        out[f"project_{src.stem}.xml"] = src.read_bytes()
    for src in sorted((ROOT / "tests/vectors").glob("*.xml")):
        out[f"vector_{src.stem}.xml"] = src.read_bytes()
    # every parameter at its bounds and just outside, one file per parameter
    for p in params():
        body = "\n".join(f"    <{p['name']}>{v}</{p['name']}>" for v in edge_values(p))
        hints = "\n".join(
            f'    <hint key="{p["name"]}" value="{v}" FileName="*.h5"/>' for v in edge_values(p)[:4]
        )
        out[f"edge_{p['name']}.xml"] = doc(body + "\n" + hints, section(p)).encode()
    big = "9" * 400
    out.update(
        {
            "deep_nesting.xml": doc("<a>" * 5000 + "</a>" * 5000).encode(),
            "deep_sections.xml": b"<Parameters>"
            + b"<Middleware_Layer>" * 3000
            + b"</Middleware_Layer>" * 3000
            + b"</Parameters>",
            "billion_laughs.xml": b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
            + b"".join(
                f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i > 1 else "")) * 10}">\n'.encode()
                for i in range(1, 10)
            )
            + b"]>\n"
            + doc("    <cb_config_list>&lol9;</cb_config_list>").split("\n", 1)[1].encode(),
            "external_entity.xml": b'<?xml version="1.0"?>\n<!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<Parameters><Middleware_Layer><cb_config_list>&x;</cb_config_list></Middleware_Layer></Parameters>\n',
            "parameter_entity.xml": b'<!DOCTYPE p [<!ENTITY % x SYSTEM "http://127.0.0.1/x.dtd"> %x;]>\n<Parameters/>\n',
            "external_dtd.xml": b'<!DOCTYPE Parameters SYSTEM "/dev/zero">\n<Parameters/>\n',
            # what a terminal acts on, in values and names that messages show (escaped)
            "terminal_controls.xml": doc(
                "    <cb_nodes>1&#13;\x9b2J\x85</cb_nodes>\n"
                '    <hint key="k&#9;" value="v"/>\n'
                "    <cb_config_list>\x9b31m&#10;x</cb_config_list>\n"
                '    <romio_cb_write FileName="\x9b">\x7f[2J</romio_cb_write>'
            ).encode(),
            "nul_in_value.xml": doc("    <cb_nodes>4\0</cb_nodes>").encode(),
            "nul_in_name.xml": doc("    <cb_no\0des>4</cb_nodes>").encode(),
            "nul_only.xml": b"\0" * 64,
            "latin1_undeclared.xml": doc("    <cb_config_list>\xe9t\xe9</cb_config_list>").encode(
                "latin-1"
            ),
            "overlong_utf8.xml": doc("    <cb_config_list>").encode()
            + b"\xc0\xaf\xe0\x80\xaf"
            + b"</cb_config_list>",
            "surrogate_utf8.xml": doc("    <cb_config_list>").encode()
            + b"\xed\xa0\x80"
            + b"</cb_config_list>",
            "utf16_bom.xml": "\ufeff".encode("utf-16-le")
            + doc("<cb_nodes>2</cb_nodes>").encode("utf-16-le"),
            "utf16_declared.xml": '<?xml version="1.0" encoding="UTF-16"?><Parameters/>'.encode(
                "utf-16"
            ),
            "utf8_bom.xml": b"\xef\xbb\xbf" + doc("    <cb_nodes>2</cb_nodes>").encode(),
            "encoding_unquoted.xml": b"<?xml version='1.0' encoding=UTF-8?><Parameters/>",
            "encoding_long.xml": (
                '<?xml version="1.0" encoding="' + "X" * 2000 + '"?><Parameters/>'
            ).encode(),
            "decl_spaces.xml": ("<?xml" + " " * 3000 + 'encoding="utf-8"?><Parameters/>').encode(),
            "decl_no_end.xml": ('<?xml version="1.0" ' + "encoding " * 500).encode(),
            "huge_numbers.xml": doc(
                f"    <cb_nodes>{big}</cb_nodes>\n    <cb_buffer_size>{big}T</cb_buffer_size>\n"
                f"    <cb_nodes>-{big}</cb_nodes>\n",
            ).encode()
            + doc(
                f"    <chunk_cache_w0>0.{big}1</chunk_cache_w0>\n    <chunk>{','.join([big] * 32)}</chunk>",
                "High_Level_IO_Library",
            ).encode(),
            "long_value.xml": doc(
                "    <cb_config_list>" + "x" * 60000 + "</cb_config_list>"
            ).encode(),
            "long_bad_value.xml": doc("    <cb_nodes>" + "x" * 5000 + "</cb_nodes>").encode(),
            "long_utf8_bad_value.xml": doc("    <cb_nodes>" + "é" * 400 + "</cb_nodes>").encode(),
            "long_name.xml": doc("    <" + "n" * 5000 + ">1</" + "n" * 5000 + ">").encode(),
            "long_bad_hint_key.xml": doc('    <hint key="' + "k/" * 300 + '" value="1"/>').encode(),
            "long_bad_attribute.xml": doc(
                "    <cb_nodes " + "é" * 300 + '="1">2</cb_nodes>'
            ).encode(),
            "long_section_attribute.xml": (
                "<Parameters " + "a" * 600 + '="1"><Middleware_Layer/></Parameters>'
            ).encode(),
            "long_root_name.xml": ("<" + "r" * 700 + "/>").encode(),
            "value_81_chars.xml": doc(
                "    <cb_nodes>"
                + "x" * 81
                + "</cb_nodes>\n    <cb_nodes>"
                + "y" * 80
                + "</cb_nodes>"
            ).encode(),
            "long_hint_key.xml": doc('    <hint key="' + "k" * 70 + '" value="1"/>').encode(),
            "long_pattern.xml": doc(
                f'    <cb_nodes FileName="{"p" * 255}">1</cb_nodes>\n    <cb_nodes FileName="{"p" * 256}">1</cb_nodes>'
            ).encode(),
            "many_attributes.xml": doc(
                "    <cb_nodes " + " ".join(f'a{i}="{i}"' for i in range(2000)) + ">1</cb_nodes>"
            ).encode(),
            "duplicate_attribute.xml": doc(
                '    <cb_nodes FileName="a" FileName="b">1</cb_nodes>'
            ).encode(),
            "many_settings.xml": doc(
                "\n".join(f"    <cb_nodes>{i % 9 + 1}</cb_nodes>" for i in range(1100))
            ).encode(),
            "many_hints.xml": doc(
                "\n".join(
                    f'    <hint key="k{i % 300}" value="{i}" FileName="*{i % 7}.h5"/>'
                    for i in range(1030)
                )
            ).encode(),
            "many_unknown.xml": doc("\n".join(f"<u{i}/>" for i in range(4000))).encode(),
            "many_sections.xml": b"<Parameters>" + b"<Bogus/>" * 5000 + b"</Parameters>",
            "namespaces.xml": b'<Parameters xmlns:a="urn:x"><a:Middleware_Layer><a:cb_nodes>2</a:cb_nodes></a:Middleware_Layer></Parameters>',
            "processing_instruction.xml": doc(
                "<?php echo 1; ?>    <cb_nodes>2<?x y?></cb_nodes>"
            ).encode(),
            "cdata_split.xml": doc("    <cb_nodes><![CDATA[1]]>2<![CDATA[3]]></cb_nodes>").encode(),
            "char_refs.xml": doc(
                "    <cb_config_list>&#42;&#x3a;&#42;&#0;</cb_config_list>"
            ).encode(),
            "char_ref_huge.xml": doc(
                "    <cb_config_list>&#99999999999;</cb_config_list>"
            ).encode(),
            "cr_only.xml": doc("    <cb_nodes>2</cb_nodes>").replace("\n", "\r").encode(),
            "truncated_utf8.xml": doc("    <cb_config_list>").encode() + b"\xe2\x82",
            "only_decl.xml": b'<?xml version="1.0"?>',
            "empty_root.xml": b"<Parameters/>",
            "root_attr.xml": b'<Parameters version="2"><Middleware_Layer/></Parameters>',
            "patterns_wild.xml": doc(
                '    <cb_nodes FileName="[">1</cb_nodes>\n    <cb_nodes FileName="*[!a-]*\\">2</cb_nodes>\n'
                '    <cb_nodes FileName="lustre:*">3</cb_nodes>\n    <cb_nodes FileName="/*/*/*">4</cb_nodes>'
            ).encode()
            + doc(
                '    <chunk VariableName="g/*/x">2</chunk>\n    <chunk VariableName="/">2</chunk>\n'
                '    <chunk VariableName="////">2</chunk>\n    <chunk_size VariableName="*" FileName="*">9</chunk_size>',
                "High_Level_IO_Library",
            ).encode(),
            "fnmatch_stars.xml": doc(
                f'    <cb_nodes FileName="{"*?" * 100}x">1</cb_nodes>\n'
                f'    <hint key="cb_nodes" FileName="{"*o" * 100}" value="2"/>'
            ).encode()
            + doc(
                f'    <chunk VariableName="{"*/" * 100}*">2</chunk>', "High_Level_IO_Library"
            ).encode(),
        }
    )
    return out


def value():
    out = {}
    for p in params():
        for i, v in enumerate(edge_values(p)):
            out[f"{p['name']}_{i:02d}"] = f"{p['name']}\n{v}".encode()
    out["hint_unknown"] = b"my_hint\nsome value"
    out["hint_long"] = b"my_hint\n" + b"x" * 300
    out["hint_utf8_long"] = b"my_hint\n" + ("é" * 200).encode()
    return out


def match():
    vec = json.loads((ROOT / "tests/vectors/match.json").read_text(encoding="utf-8"))
    out = {}
    for kind in ("file", "dataset"):
        for i, (pattern, path, _) in enumerate(vec[kind]):
            text = pattern or ""
            if path is not None:
                text += "\t" + path
            out[f"vector_{kind}_{i:02d}"] = text.encode()
    out.update(
        {
            "stars_a": ("*a" * 40 + "b\t" + "a" * 200).encode(),
            "stars_q": ("*?" * 60 + "\t" + "x" * 300).encode(),
            "stars_slash": ("*/" * 60 + "*\t" + "a/" * 400 + "b").encode(),
            "brackets": (b"[[:alpha:]][!/][]a][\t]x"),
            "open_bracket": b"[\t[",
            "backslash_end": b"x\\\tx\\",
            "romio_prefix": b"ufs:/a/*.h5\tnfs:/a/b.h5",
            "colon_only": b":\t:",
            "many_slashes": b"/" * 255 + b"\t" + b"/" * 4000,
            "dataset_suffix": b"g2/x\t/g1/g2/x",
            "no_path": b"g2/*",
        }
    )
    return out


def dictionary():
    """libFuzzer's dictionary for the control file: XML's tokens and the registry's words."""
    words = [
        "<Parameters>",
        "</Parameters>",
        "<hint",
        "key=",
        "value=",
        "FileName=",
        "VariableName=",
    ]
    words += [
        "<?xml",
        "?>",
        "encoding=",
        "<!--",
        "-->",
        "<![CDATA[",
        "]]>",
        "<!DOCTYPE",
        "<!ENTITY",
    ]
    words += ["&amp;", "&lt;", "&#", "/>", "</", "UTF-8", "US-ASCII", "K", "MiB", "e-400", ","]
    words += [
        f"<{s}>" for s in ("High_Level_IO_Library", "Middleware_Layer", "Parallel_File_System")
    ]
    for p in params():
        words += [p["name"], f"<{p['name']}>", f"</{p['name']}>"]
        words += [c for c in p["choices"].split("|") if p["choices"] != "-"]
        words += [x for x in (p["min"], p["max"]) if x != "-"]
    lines = ["# libFuzzer dictionary for fuzz_controlfile (written by seeds.py)"]
    lines += [json.dumps(w) for w in dict.fromkeys(words)]
    return "\n".join(lines) + "\n"


def main():
    (OUT.parent / "controlfile.dict").write_text(dictionary(), encoding="utf-8")
    for name, files in (("controlfile", controlfile()), ("value", value()), ("match", match())):
        d = OUT / name
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():  # inputs the fuzzers found ("fuzz-*") stay
            if not old.name.startswith("fuzz-"):
                old.unlink()
        for fname, data in files.items():
            (d / fname).write_bytes(data)
        print(f"{d.relative_to(ROOT)}: {len(files)} inputs")


if __name__ == "__main__":
    main()
