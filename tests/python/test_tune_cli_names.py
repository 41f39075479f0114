"""`--study NAME` names the study's directory: one path component, never a way out of it (an
outside tester's `--study ../../evil` made a directory two levels up)."""

import argparse

import pytest

from iotune import tune_cli


@pytest.mark.parametrize("name", ["../../evil", "", " ", ".", "..", "a/b", "x\ny"])
def test_a_study_name_that_is_not_one_path_component_is_refused(name):
    with pytest.raises(argparse.ArgumentTypeError, match="cannot name a study"):
        tune_cli._study_name(name)


def test_ordinary_names_pass():
    for name in ("demo-20261127-210000", "vpic io", "app-1a2b3c4d", "ünïcode"):
        assert tune_cli._study_name(name) == name
