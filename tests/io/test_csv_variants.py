"""CSV files as other tools write them (issue 15): bzip2/xz/Zstandard, UTF-16 (Excel's "Unicode text"),
``#`` comment lines above the header, hive folder values for CSV as for Parquet."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import lzma
from pathlib import Path

import pandas as pd
import pytest

import pickscale
from pickscale.errors import InputError
from pickscale.io import normalise, read_raw, resolve_sources
from pickscale.io.parquet import folder_values, hive_columns

TEXT = "station,phase,time\nCI.CLC,P,2020-01-01T00:00:00Z\nCI.CLC,S,2020-01-01T00:00:05Z\n"
HAS_ZSTD = importlib.util.find_spec("zstandard") is not None


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


# --------------------------------------------------------------------------- compression


@pytest.mark.parametrize("suffix, compress", [(".csv.bz2", bz2.compress), (".csv.xz", lzma.compress),
                                              (".csv.gz", gzip.compress)])
def test_compressed_csv_is_read(tmp_path, suffix, compress):
    p = _write(tmp_path / f"ref{suffix}", compress(TEXT.encode()))
    df = read_raw(p)
    assert list(df.columns) == ["station", "phase", "time"] and len(df) == 2


@pytest.mark.parametrize("compress", [bz2.compress, lzma.compress])
def test_compression_is_sniffed_from_the_content_not_the_name(tmp_path, compress):
    p = _write(tmp_path / "ref.csv", compress(TEXT.encode()))
    assert len(read_raw(p)) == 2


def _zstd_frame(data: bytes) -> bytes:
    """A valid Zstandard frame holding ``data`` in one raw (stored) block, built by hand (RFC 8878)."""
    assert len(data) < 256
    header = b"\x28\xb5\x2f\xfd" + bytes([0x20, len(data)])  # single segment, 1-byte content size
    block = ((len(data) << 3) | 1).to_bytes(3, "little")  # the last block, raw
    return header + block + data


@pytest.mark.skipif(HAS_ZSTD, reason="the message for a missing zstandard package")
def test_zstd_without_the_package_names_the_compression_and_the_package(tmp_path):
    p = _write(tmp_path / "picks.csv.zst", _zstd_frame(TEXT.encode()))
    with pytest.raises(InputError) as e:
        read_raw(p)
    msg = str(e.value)
    assert p in msg and "Zstandard (zstd)-compressed" in msg and "pip install zstandard" in msg
    assert "binary data" not in msg


@pytest.mark.skipif(not HAS_ZSTD, reason="needs the zstandard package")
def test_zstd_csv_is_read_with_the_package(tmp_path):
    p = _write(tmp_path / "picks.csv.zst", _zstd_frame(TEXT.encode()))
    assert len(read_raw(p)) == 2


def test_folders_pick_up_every_compressed_csv(tmp_path):
    for name in ["a.csv.bz2", "b.csv.xz", "c.csv.zst", "d.CSV.BZ2", "e.txt.bz2", "f.bz2"]:
        (tmp_path / name).write_bytes(b"x")
    got = [Path(p).name for p in resolve_sources(tmp_path)]
    assert got == ["a.csv.bz2", "b.csv.xz", "c.csv.zst", "d.CSV.BZ2"]


def test_empty_folder_message_lists_the_compressed_suffixes(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError) as e:
        resolve_sources(tmp_path)
    assert "*.csv, *.csv.gz, *.csv.bz2, *.csv.xz, *.csv.zst, *.parquet or *.pq" in str(e.value)


def test_compressed_data_named_parquet_is_named(tmp_path):
    p = _write(tmp_path / "picks.parquet", bz2.compress(TEXT.encode()))
    with pytest.raises(InputError, match="bzip2-compressed data"):
        read_raw(p)


# --------------------------------------------------------------------------- UTF-16


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_with_a_byte_order_mark_is_read(tmp_path, encoding):
    # Excel's "Unicode text": UTF-16 with a BOM, tab-separated; non-ASCII names survive.
    text = TEXT.replace(",", "\t").replace("CI.CLC", "CH.ZÜR")
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(encoding, b"")
    p = _write(tmp_path / "ref.txt", bom + text.encode(encoding))
    df = read_raw(p)
    assert list(df.columns) == ["station", "phase", "time"]
    assert df["station"].tolist() == ["CH.ZÜR", "CH.ZÜR"]
    assert df.attrs["delimiter"] == "\t" and df.attrs["encoding"] in ("utf-16", "utf-32")


def test_compressed_utf16_is_read(tmp_path):
    p = _write(tmp_path / "ref.csv.gz", gzip.compress(TEXT.encode("utf-16")))
    assert len(read_raw(p)) == 2


def test_utf16_without_a_byte_order_mark_is_named(tmp_path):
    p = _write(tmp_path / "ref.csv", TEXT.encode("utf-16-le"))
    with pytest.raises(InputError) as e:
        read_raw(p)
    assert "UTF-16 text without a byte-order mark" in str(e.value) and "binary" not in str(e.value)


def test_broken_utf16_is_named(tmp_path):
    p = _write(tmp_path / "ref.csv", TEXT.encode("utf-16") + b"\x00\xd8")  # an unpaired surrogate
    with pytest.raises(InputError, match="UTF-16 byte-order mark but is not valid UTF-16"):
        read_raw(p)


@pytest.mark.slow
def test_utf16_reference_scores_like_utf8(tmp_path):
    from tests.helpers.catalogues import plain_catalogue

    cat = plain_catalogue(seed=3, n_datasets=1, n_stations=3, n_events=4)
    utf8 = tmp_path / "ref.csv"
    cat.reference.to_csv(utf8, index=False)
    utf16 = tmp_path / "ref16.txt"
    utf16.write_bytes(cat.reference.to_csv(index=False, sep="\t").encode("utf-16"))
    picks = tmp_path / "picks.csv"
    cat.picks.to_csv(picks, index=False)
    a = pickscale.tables(pickscale.score(str(utf8), str(picks)))["detection"]
    b = pickscale.tables(pickscale.score(str(utf16), str(picks)))["detection"]
    pd.testing.assert_frame_equal(a, b)


# --------------------------------------------------------------------------- comment lines


COMMENTED = ("# Exported by SeisComP scolv 6.1\n# region: Ridgecrest, 2019\n#\n"
             "station,phase,time\nCI.CLC,P,2020-01-01T00:00:00Z\nCI.CLC,S,bad\n")


def test_leading_comment_lines_are_skipped(tmp_path):
    p = _write(tmp_path / "ref.csv", COMMENTED.encode())
    df = read_raw(p)
    assert list(df.columns) == ["station", "phase", "time"] and len(df) == 2
    assert df.attrs["comment_lines"] == 3


def test_row_numbers_count_from_the_top_of_the_file(tmp_path):
    # The bad time is on line 6 of the file (3 comments, the header, one good row).
    p = _write(tmp_path / "ref.csv", COMMENTED.encode())
    with pytest.raises(InputError) as e:
        normalise(read_raw(p), role="reference", source=p)
    assert "row 6: 'bad'" in str(e.value)


def test_a_hash_inside_the_data_is_data(tmp_path):
    text = "# note\nstation,phase,time\n#X,P,2020-01-01T00:00:00Z\nA,P,2020-01-01T00:00:01Z\n"
    df = read_raw(_write(tmp_path / "ref.csv", text.encode()))
    assert df["station"].tolist() == ["#X", "A"]
    df = read_raw(_write(tmp_path / "plain.csv", b"station,phase,time\n#X,P,1\n"))
    assert df["station"].tolist() == ["#X"] and "comment_lines" not in df.attrs


def test_comment_lines_with_quotes_commas_and_bom(tmp_path):
    text = '\ufeff# "unbalanced quote, and commas; semicolons\n# done\nstation;phase;time\nA;P;1\n'
    df = read_raw(_write(tmp_path / "ref.csv", text.encode("utf-8")))
    assert list(df.columns) == ["station", "phase", "time"] and df.attrs["delimiter"] == ";"
    assert df["station"].tolist() == ["A"]


def test_comment_lines_in_a_compressed_utf16_file(tmp_path):
    p = _write(tmp_path / "ref.csv.bz2", bz2.compress(COMMENTED.replace(",", "\t").encode("utf-16")))
    with pytest.raises(InputError, match="row 6: 'bad'"):
        normalise(read_raw(p), role="reference", source=p)


def test_only_comment_lines(tmp_path):
    p = _write(tmp_path / "ref.csv", b"# nothing here\n# at all\n")
    with pytest.raises(InputError, match="only comment lines"):
        read_raw(p)


# --------------------------------------------------------------------------- hive folders for CSV


def test_folder_values_rule():
    assert folder_values("study=A/ref.csv", "reference", ["station", "phase", "time"]) == {"study": "A"}
    # The file's own column wins; keys that are no SPEC §1 name are left out.
    assert folder_values("study=A/year=2020/ref.csv", "reference", ["dataset", "station"]) == {}
    # model is a picks column only.
    assert folder_values("model=PN/ref.csv", "reference", ["station"]) == {}
    assert folder_values("model=PN/picks.csv", "picks", ["station"]) == {"model": "PN"}
    # Two folders for one column: the one nearest the file.
    assert folder_values("study=A/dataset=B/picks.csv", "picks", []) == {"dataset": "B"}
    assert hive_columns("dataset=A/dataset=B/x.csv") == {"dataset": "B"}


def test_read_raw_with_a_role_adds_folder_values_to_csv(tmp_path):
    p = _write(tmp_path / "study=A%2FB" / "ref.csv", TEXT.encode())
    assert "study" not in read_raw(p).columns  # as it is, without a role
    df = read_raw(p, role="reference")
    assert df["study"].tolist() == ["A/B", "A/B"]
    n = normalise(df, role="reference", source=p)
    assert set(n.frame["dataset"]) == {"A/B"}


def test_csv_reference_and_parquet_picks_in_hive_folders_share_the_dataset(tmp_path):
    # Issue 15: the picks got dataset A from the folder, the reference did not.
    from tests.helpers.catalogues import plain_catalogue

    cat = plain_catalogue(seed=4, n_datasets=1, n_stations=3, n_events=4)
    folder = tmp_path / "study=A"
    folder.mkdir()
    cat.reference.drop(columns="dataset").to_csv(folder / "ref.csv", index=False)
    cat.picks.drop(columns="dataset").to_parquet(folder / "picks.parquet", index=False)
    res = pickscale.score(str(folder / "ref.csv"), str(folder / "picks.parquet"))
    assert list(res["dataset"].values) == ["A"]


def test_a_file_column_wins_over_the_folder(tmp_path):
    p = _write(tmp_path / "dataset=A" / "ref.csv", b"dataset,station,phase,time\nB,CI.CLC,P,0\n")
    n = normalise(read_raw(p, role="reference"), role="reference", source=p)
    assert set(n.frame["dataset"]) == {"B"}
