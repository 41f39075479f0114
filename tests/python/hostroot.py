"""Fake /sys and /proc trees for iotune.hostnoise's tests (the module reads below a root)."""

from __future__ import annotations

import os
from pathlib import Path

# this project's development VM: balloon with features STATS_VQ, DEFLATE_ON_OOM, REPORTING
VM_FEATURES = "0110010100000000000000000000000010" + "0" * 94
NO_REPORTING = "0110000100000000000000000000000010" + "0" * 94


def make_root(
    root: Path,
    *,
    balloon: bool = True,
    features: str = VM_FEATURES,
    driver: str | None = "virtio_balloon",
    min_free_ms: str | None = "0",
    governors: list[str] | None = None,
    online: str | None = "0-1",
    loadavg: str | None = "0.10 0.20 0.30 1/92 24179",
) -> Path:
    """A fake machine below root: a virtio block device always, a balloon if asked."""
    devices = root / "sys" / "bus" / "virtio" / "devices"
    drivers = root / "sys" / "bus" / "virtio" / "drivers"
    devices.mkdir(parents=True)
    for name, dev, feats, drv in (
        ("virtio1", "0x0002", features, "virtio_blk"),
        *([("virtio0", "0x0005", features, driver)] if balloon else []),
    ):
        d = devices / name
        d.mkdir()
        (d / "device").write_text(dev + "\n")
        (d / "features").write_text(feats + "\n")
        if drv:
            (drivers / drv).mkdir(parents=True, exist_ok=True)
            os.symlink(drivers / drv, d / "driver")
    params = root / "sys" / "module" / "page_reporting" / "parameters"
    params.mkdir(parents=True)
    (params / "page_reporting_order").write_text("9\n")
    if min_free_ms is not None:
        (params / "min_free_ms").write_text(min_free_ms + "\n")
        (params / "reported_kib").write_text("61493112\n")
    cpu = root / "sys" / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    if online is not None:
        (cpu / "online").write_text(online + "\n")
    for i, g in enumerate(governors or []):
        (cpu / f"cpu{i}" / "cpufreq").mkdir(parents=True)
        (cpu / f"cpu{i}" / "cpufreq" / "scaling_governor").write_text(g + "\n")
    (root / "proc").mkdir()
    if loadavg is not None:
        (root / "proc" / "loadavg").write_text(loadavg + "\n")
    return root


def param(root: Path) -> Path:
    return root / "sys" / "module" / "page_reporting" / "parameters" / "min_free_ms"
