"""bench/freed_memory/freed_memory.py holds a VM's freed memory only while a benchmark measures: the
parameter is raised inside the context and restored after it, also when the benchmark fails;
where it cannot be written nothing changes and the record says why."""

import pytest
from conftest import bench_module


@pytest.fixture(scope="module")
def fm():
    return bench_module("freed_memory")


def test_the_parameter_is_raised_while_measuring_and_restored_after(fm, tmp_path):
    param = tmp_path / "min_free_ms"
    param.write_text("0\n")
    with fm.hold(param, 5000) as rec:
        assert param.read_text().strip() == "5000"
        assert rec == {"held": True, "param": str(param), "was": "0", "set": "5000"}
    assert param.read_text().strip() == "0"


def test_a_failing_benchmark_still_restores_the_parameter(fm, tmp_path):
    param = tmp_path / "min_free_ms"
    param.write_text("250\n")
    with pytest.raises(RuntimeError), fm.hold(param, 5000):
        raise RuntimeError("the benchmark failed")
    assert param.read_text().strip() == "250"


def test_without_the_parameter_nothing_changes_and_the_record_says_why(fm, tmp_path):
    with fm.hold(tmp_path / "absent") as rec:
        assert rec["held"] is False and "absent" in rec["why"]
    assert not (tmp_path / "absent").exists()


def test_not_asked_holds_nothing(fm):
    with fm.maybe_hold(False) as rec:
        assert rec == {"held": False, "why": "not asked"}


def test_as_a_command_it_runs_the_command_and_returns_its_exit_status(fm, tmp_path, monkeypatch):
    param = tmp_path / "min_free_ms"
    param.write_text("0\n")
    monkeypatch.setattr(fm, "PARAM", param)
    seen = tmp_path / "seen"
    cmd = ["sh", "-c", f"cat {param} > {seen}; exit 3"]
    assert fm.main(["--", *cmd]) == 3
    assert seen.read_text().strip() == str(fm.HOLD_MS)  # held while the command ran
    assert param.read_text().strip() == "0"
    assert fm.main([]) == 2
