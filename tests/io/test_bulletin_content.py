"""Bulletins are recognised by their content, as ObsPy recognises them: a Nordic S-file under its real name
(``01-0411-15L.S201309``, ``select.out``) is read as the same file named ``.nordic`` is."""

from __future__ import annotations

import os
import shutil

import pytest

obspy = pytest.importorskip("obspy")

import pickscale  # noqa: E402
from pickscale.io.formats.bulletins import bulletin_files, read_bulletins, text_bulletin  # noqa: E402
from pickscale.report.tables import to_csv_bytes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::pickscale.PickscaleWarning")

NORDIC = os.path.join(os.path.dirname(obspy.__file__), "io", "nordic", "tests", "data")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["01-0411-15L.S201309", "select.out"])
def test_a_nordic_file_under_its_real_name_is_a_bulletin(name, tmp_path):
    real = tmp_path / name
    shutil.copy(os.path.join(NORDIC, name), real)
    named = tmp_path / "same.nordic"
    shutil.copy(real, named)
    assert bulletin_files(str(real)) == [str(real)]
    arrivals = read_bulletins([str(named)])
    picks = arrivals.assign(model="m", conf=0.9)[["station", "phase", "time", "model", "conf"]]
    by_name = pickscale.score(str(named), picks)
    by_content = pickscale.score(str(real), picks)
    assert int(by_content.n_reference.sum()) == int(by_name.n_reference.sum()) > 0
    for table, frame in pickscale.tables(by_name).items():
        assert to_csv_bytes(pickscale.tables(by_content)[table]) == to_csv_bytes(frame), table


def test_a_csv_without_a_suffix_is_not_taken_for_a_bulletin(tmp_path):
    plain = tmp_path / "arrivals.out"
    plain.write_text("station,phase,time\nA,P,2024-01-01T00:00:00Z\n")
    assert bulletin_files(str(plain)) is None
    # Type 1 in column 80 and a date and time in columns 2-20, as ObsPy's own test asks.
    assert text_bulletin(b" 2013  9 1 0411 15.7 L".ljust(79) + b"1\n") == "nordic"
    assert text_bulletin(b" YYYY  9 1 0411 15.7 L".ljust(79) + b"1\n") is None
    assert text_bulletin(b" 2013  9 1 0411 15.7 L".ljust(79) + b"7\n") is None
