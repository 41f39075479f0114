"""A fake application for the tuner's tests: reads its control file (IOTUNE_CONFIG), writes a
data file into its working directory, sleeps and reports a time that depends on the settings,
in the kernels' `IOTUNE_RESULT {json}` form. Some settings make it misbehave on purpose:

  cb_buffer_size=1048576       fast (0.02 s)                 default: 0.06 s
  chunk_cache_bytes=N          0.06 s - N / 2^30 (a gentle slope)
  romio_cb_write=disable       slow (SLOW_S, default 3 s): to be capped
  fill_time=alloc              crashes (SIGSEGV)
  fill_time=never              hangs
  transfer_mode=independent    exits 1
"""

import json
import os
import re
import signal
import sys
import time

settings = {}
path = os.environ.get("IOTUNE_CONFIG")
if path:
    with open(path, encoding="utf-8") as f:
        settings = dict(re.findall(r"<(\w+)>([^<]*)</\1>", f.read()))
pids = os.environ.get("FAKE_APP_PIDS")
if pids:
    with open(pids, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
time.sleep(float(os.environ.get("FAKE_APP_PAUSE", "0")))  # a long trial, to be killed in
log = os.environ.get("FAKE_APP_LOG")
if log:
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(settings, sort_keys=True) + "\n")
with open("data.out", "wb") as f:  # in the trial's scratch directory
    f.write(b"x" * 4096)
os.makedirs("sub", exist_ok=True)
with open(os.path.join("sub", "more.out"), "wb") as f:
    f.write(b"y" * 100)

t = 0.06
if settings.get("cb_buffer_size") == "1048576":
    t = 0.02
if "chunk_cache_bytes" in settings:
    t -= int(settings["chunk_cache_bytes"]) / 2**30
if settings.get("romio_cb_write") == "disable":
    t = float(os.environ.get("SLOW_S", "3"))
if settings.get("fill_time") == "alloc":
    os.kill(os.getpid(), signal.SIGSEGV)
if settings.get("fill_time") == "never":
    time.sleep(3600)
if settings.get("transfer_mode") == "independent":
    print("fake_app: refusing independent transfers", file=sys.stderr)
    sys.exit(1)
time.sleep(t)
result = {"kernel": "fake", "phase": "write", "ranks": 1, "bytes": 10**6, "total_s": t}
print("IOTUNE_RESULT " + json.dumps(result))
