"""A profile stays UTF-8 JSON whatever bytes the names it holds have (outside tester): a
knowledge base's study name with bytes of no UTF-8 character (IOTUNE_ADAPT_KB) was copied
into the profile raw, and `iotune show` / `iotune adapt` then called the profile binary and
lost it; a file name with such bytes did the same. They are now written as Python's
surrogateescape reads them (\\udcXX), so os.fsencode gives the bytes back."""

import os
from pathlib import Path

from iotune import profile

DATA = Path(__file__).resolve().parent.parent / "data"


def test_a_file_name_that_is_not_utf8_keeps_the_profile_readable(mpirun, test_prog, libiotune,
                                                                  tmp_path):  # fmt: skip
    name = os.fsdecode(b"o\xff\xfe.h5")
    out = tmp_path / "p.json"
    mpirun(2, [test_prog("h5probe"), tmp_path / name], cwd=tmp_path, preload=libiotune,
           env={"IOTUNE_PROFILE": str(out)})  # fmt: skip
    out.read_bytes().decode("utf-8")  # strict: raises on a raw byte
    names = [os.fsencode(f["name"]) for f in profile.load(out).data["files"]]
    assert any(n.endswith(b"o\xff\xfe.h5") for n in names), names


def test_a_knowledge_base_study_that_is_not_utf8_keeps_the_profile_readable(
    mpirun, test_prog, libiotune, tmp_path
):
    kb = DATA / "kb" / "study-not-utf8.json"
    assert b"\xff" in kb.read_bytes()
    out = tmp_path / "p.json"
    env = {"IOTUNE_PROFILE": str(out), "IOTUNE_MODE": "adaptive", "IOTUNE_ADAPT_KB": str(kb)}
    mpirun(2, [test_prog("h5probe"), tmp_path / "u.h5"], cwd=tmp_path, preload=libiotune,
           env=env)  # fmt: skip
    out.read_bytes().decode("utf-8")
    assert profile.load(out).data["ranks"] == 2
