"""`iotune check` suggests the closest parameter or value and names the right section."""

import subprocess
import sys

BAD = b"""<Parameters>
  <High_Level_IO_Library>
    <fill_tme>never</fill_tme>
    <cb_buffer_size>1048576</cb_buffer_size>
    <fill_time>nevr</fill_time>
  </High_Level_IO_Library>
  <MPI_IO>
    <romio_cb_write>disable</romio_cb_write>
  </MPI_IO>
</Parameters>
"""


def test_check_says_did_you_mean_and_where_a_parameter_belongs(tmp_path):
    f = tmp_path / "bad.xml"
    f.write_bytes(BAD)
    r = subprocess.run(
        [sys.executable, "-m", "iotune", "check", str(f)], capture_output=True, text=True
    )
    assert r.returncode == 1
    assert (
        f"hint: {f}:3: <fill_tme>: did you mean <fill_time> (in <High_Level_IO_Library>)?"
        in r.stderr
    )
    assert "<cb_buffer_size>: cb_buffer_size is an MPI-IO setting: it belongs in " \
        "<Middleware_Layer>" in r.stderr  # fmt: skip
    assert "did you mean 'never'?" in r.stderr
    assert f"hint: {f}:8: <romio_cb_write>: romio_cb_write is an MPI-IO setting: it belongs in " \
        "<Middleware_Layer>" in r.stderr  # fmt: skip
