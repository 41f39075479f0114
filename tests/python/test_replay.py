"""bench/replay.py replays read landscapes right: read-side settings stay in the key of a
landscape that varied them, and a replayed run reports the bytes the real one read."""

import importlib.util
import json
import random
from pathlib import Path

import pytest

REPLAY = Path(__file__).resolve().parents[2] / "bench" / "replay.py"


@pytest.fixture(scope="module")
def replay():
    spec = importlib.util.spec_from_file_location("replay", REPLAY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(settings, value, **cols):
    key = ";".join(f"{k}={v}" for k, v in sorted(settings.items())) or "(defaults)"
    return {"kernel": "k", "config": key, "settings": json.dumps(settings), "status": "ok",
            "value_s": str(value), "wall_s": str(value + 0.1), **cols}  # fmt: skip


def test_a_read_landscape_keeps_its_read_dimensions_and_bytes(replay):
    rows = [
        _row({}, 1.0, bytes_read="1000", bytes_written="0"),
        _row({"romio_cb_read": "disable"}, 0.5, bytes_read="1000", bytes_written="0"),
    ]
    land = replay.Landscape(rows)
    assert land.reads
    assert land.key({"romio_cb_read": "disable"}) == "romio_cb_read=disable"
    assert land.truth["romio_cb_read=disable"] == 0.5
    (_, _, metrics), *_ = land.samples["(defaults)"]
    assert metrics == {"bytes_read": 1000, "bytes_written": 0}
    with pytest.raises(replay.CannotReplay):  # never varied, and it reads: cannot stand for it
        land.key({"romio_ds_read": "disable"})


def test_a_write_landscape_ignores_read_settings_and_reads_nothing(replay):
    rows = [_row({}, 1.0, bytes="500"), _row({"fill_time": "never"}, 0.5, bytes="500")]
    land = replay.Landscape(rows)
    assert not land.reads
    assert land.key({"fill_time": "never", "romio_cb_read": "disable"}) == "fill_time=never"
    value, wall, metrics = random.Random(0).choice(land.samples["fill_time=never"])
    assert metrics == {"bytes_read": 0, "bytes_written": 500}
