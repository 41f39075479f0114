"""Leave out of the search what cannot matter for this application.

The baseline run (the stack's defaults) is profiled like every trial. A setting that only
changes reads (romio_cb_read, ind_rd_buffer_size, ...) cannot make a run that reads nothing
faster, and one that only changes writes or file creation (fill_time, alignment, chunking,
striping, ...) cannot help a run that writes nothing; the registry's `io` column says which is
which. Searching them anyway costs trials (the model must learn that they do nothing) and
clutters the recommendation with settings that look tuned but are noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iotune.space import Space

NO_READS = "the baseline run read nothing"
NO_WRITES = "the baseline run wrote nothing"


def inert(space: Space, metrics: Mapping[str, Any]) -> dict[str, str]:
    """{parameter: why it is left out} for the space's parameters that cannot matter, judged
    from a run's measured bytes; {} when the run did not say how many bytes it read and wrote."""
    read, written = metrics.get("bytes_read"), metrics.get("bytes_written")
    if read is None or written is None:
        return {}
    out = {}
    for d in space.dims:
        if d.param.io == "read" and read == 0:
            out[d.name] = NO_READS
        elif d.param.io == "write" and written == 0:
            out[d.name] = NO_WRITES
    return out
