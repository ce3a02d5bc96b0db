"""Security of issue 6: inputs are data only; clusters pickscale starts listen on 127.0.0.1; docs/security.md
says how to use a secured (TLS) cluster, and that recipe works.
"""

from __future__ import annotations

import ast
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pickscale
from pickscale.cli import main
from pickscale.config import load_config
from pickscale.errors import InputError, OptionsError, StoreError
from pickscale.io import normalise, read_raw
from pickscale.store.manifest import write_manifest
from tests.helpers.catalogues import plain_catalogue

PACKAGE = Path(pickscale.__file__).resolve().parent
SECURITY_DOC = PACKAGE.parent / "docs" / "security.md"


# --------------------------------------------------------------------------- no code from data


# Calls that run code or unpickle: none of them belongs in a tool that reads other people's files.
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "execfile", "input"}
FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "joblib",
                     "subprocess", "pty", "yaml"}
FORBIDDEN_ATTRIBUTES = {
    "read_pickle", "to_pickle", "system", "popen", "spawnv", "execv", "execvp", "unsafe_load",
    "eval", "query",  # pandas.eval / DataFrame.query / DataFrame.eval evaluate expressions
    "loads",  # pickle.loads and the like (json.loads is allowed below)
}
ALLOWED_ATTRIBUTE_CALLS = {("json", "loads"), ("tomllib", "loads")}


def _python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.slow
def test_the_package_never_evaluates_or_unpickles():
    problems = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = lambda node: f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"  # noqa: E731, B023
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                problems += [f"{where(node)} imports {a.name}" for a in node.names
                             if a.name.split(".")[0] in FORBIDDEN_MODULES]
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[0] in FORBIDDEN_MODULES:
                    problems.append(f"{where(node)} imports from {node.module}")
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS:
                    problems.append(f"{where(node)} calls {f.id}()")
                if isinstance(f, ast.Attribute) and f.attr in FORBIDDEN_ATTRIBUTES:
                    owner = f.value.id if isinstance(f.value, ast.Name) else ""
                    if (owner, f.attr) not in ALLOWED_ATTRIBUTE_CALLS:
                        problems.append(f"{where(node)} calls .{f.attr}()")
                for kw in node.keywords:
                    allowed = isinstance(kw.value, ast.Constant) and kw.value.value is False
                    if kw.arg == "allow_pickle" and not allowed:
                        problems.append(f"{where(node)} passes allow_pickle")
    assert not problems, "\n".join(problems)


def test_config_files_are_parsed_with_tomllib_only():
    source = (PACKAGE / "config.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "tomllib" in imported
    assert not imported & {"yaml", "json5", "configparser", "runpy", "importlib"}


class _Trap:
    """Unpickling this creates a file: proof that something unpickled data."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_parquet_with_a_pickled_extension_type_is_not_unpickled(tmp_path):
    """pyarrow's old "arrow.py_extension_type" was a pickle: such a column is read as plain bytes."""
    marker = tmp_path / "EXECUTED"
    payload = pickle.dumps(_Trap(str(marker)))
    field = pa.field("station", pa.binary(), metadata={b"ARROW:extension:name": b"arrow.py_extension_type",
                                                       b"ARROW:extension:metadata": payload})
    table = pa.table({"station": pa.array([b"CI.CLC", b"CI.SLA"], pa.binary()), "phase": ["P", "S"],
                      "time": ["2024-03-01T00:00:00Z", "2024-03-01T00:00:05Z"]})
    table = table.cast(pa.schema([field, pa.field("phase", pa.string()), pa.field("time", pa.string())]))
    path = tmp_path / "reference.parquet"
    pq.write_table(table, path)
    try:
        frame = normalise(read_raw(str(path)), role="reference", source=str(path)).frame
        assert frame["station"].tolist() == ["CI.CLC", "CI.SLA"]
    except InputError:
        pass
    with pytest.raises(InputError):  # (the picks file of this test has no picks: nothing to score)
        pickscale.score(str(path), str(path))
    assert not marker.exists()


def test_parquet_with_a_pickled_pandas_metadata_is_not_unpickled(tmp_path):
    """Metadata that names Python objects is metadata: it does not import or run them."""
    marker = tmp_path / "EXECUTED"
    table = pa.table({"station": ["CI.CLC"], "phase": ["P"], "time": ["2024-03-01T00:00:00Z"]})
    evil = {"index_columns": [], "column_indexes": [], "columns": [
        {"name": "station", "field_name": "station", "pandas_type": "object", "numpy_type": "object",
         "metadata": {"pickle": pickle.dumps(_Trap(str(marker))).hex()}}], "pandas_version": "2.2.0"}
    import json

    table = table.replace_schema_metadata({b"pandas": json.dumps(evil).encode()})
    path = tmp_path / "reference.parquet"
    pq.write_table(table, path)
    try:
        normalise(read_raw(str(path)), role="reference", source=str(path))
    except InputError:
        pass
    assert not marker.exists()


def test_cells_that_look_like_code_are_just_text(tmp_path):
    """Station and model names that look like code or spreadsheet formulas stay names."""
    marker = tmp_path / "EXECUTED"
    code = f"__import__('os').mkdir({str(marker)!r})"
    cat = plain_catalogue(seed=2, n_datasets=1, n_stations=2, n_events=4)
    stations = {s: f"{code}#{i}" for i, s in enumerate(sorted(set(cat.reference["station"])))}
    ref = cat.reference.assign(station=cat.reference["station"].map(stations))
    picks = cat.picks.assign(station=cat.picks["station"].map(stations), model="=cmd|' /C calc'!A0")
    ref_path, picks_path = tmp_path / "ref.csv", tmp_path / "picks.csv"
    ref.to_csv(ref_path, index=False)
    picks.to_csv(picks_path, index=False)
    ds = pickscale.score(str(ref_path), str(picks_path))
    assert sorted(ds["station"].values.tolist()) == sorted(stations.values())
    assert ds["model"].values.tolist() == ["=cmd|' /C calc'!A0"]
    assert not marker.exists()


def test_a_config_file_is_data(tmp_path, capsys):
    """Values that look like code are strings; keys that look like attributes are unknown keys."""
    marker = tmp_path / "EXECUTED"
    config = tmp_path / "study.toml"
    config.write_text(f'reference = "__import__(\'os\').mkdir(\'{marker}\')"\npicks = "p.csv"\nout = "o"\n')
    settings, base = load_config(config)
    assert settings["reference"].startswith("__import__")
    code = main(["score", "--config", str(config)])
    _, err = capsys.readouterr()
    assert code == 2 and "no such file or folder" in err and "Traceback" not in err
    assert not marker.exists()
    config.write_text('__class__ = "x"\n')
    with pytest.raises(OptionsError, match="unknown key '__class__'"):
        load_config(config)
    config.write_text("[options]\n__init__ = 1\n")
    with pytest.raises(OptionsError, match="unknown key \\[options\\] '__init__'"):
        load_config(config)


@pytest.mark.slow
def test_a_store_that_names_a_pickle_codec_is_refused(tmp_path):
    """A results store can come from anyone: a codec Zarr does not know is an error, not code."""
    import json

    ds = pickscale.score(*map(str, plain_catalogue(seed=2, n_datasets=1, n_stations=2,
                                                   n_events=4).write_csv(tmp_path / "in")))
    store = pickscale.save(ds, tmp_path / "results.zarr")
    meta_path = store / "recall" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["codecs"] = [{"name": "numcodecs.pickle", "configuration": {"protocol": 5}}]
    meta_path.write_text(json.dumps(meta))
    root = json.loads((store / "zarr.json").read_text())
    root["consolidated_metadata"]["metadata"]["recall"]["codecs"] = meta["codecs"]
    (store / "zarr.json").write_text(json.dumps(root))
    # An attacker would write a manifest that matches: the codec itself must be refused.
    (store / "pickscale-manifest.json").unlink()
    write_manifest(store)
    with pytest.raises(StoreError, match="numcodecs.pickle"):
        pickscale.open_results(store).load()


# --------------------------------------------------------------------------- clusters listen on 127.0.0.1


def _listening(pids) -> set[tuple[int, str, int]]:
    import psutil

    out = set()
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out |= {(pid, c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}
    return out


def _cluster_processes(client) -> list[int]:
    import psutil

    me = psutil.Process()
    return [os.getpid(), *client.run(os.getpid).values(), *(c.pid for c in me.children(recursive=True))]


@pytest.mark.cluster
@pytest.mark.parametrize("how", ["local_cluster", "local_cluster-with-dashboard", "command"])
def test_clusters_pickscale_starts_listen_on_localhost_only(how):
    from urllib.parse import urlparse

    before = _listening([os.getpid()])
    if how == "command":
        from pickscale.engine import cluster_client

        context = cluster_client(workers=1)
        client = context.__enter__()
    else:
        kwargs = {"dashboard_address": "127.0.0.1:0"} if how.endswith("dashboard") else {}
        client = pickscale.local_cluster(1, **kwargs)
    try:
        sockets = _listening(_cluster_processes(client)) - before
        assert sockets, "found no listening socket of the cluster"
        exposed = sorted(s for s in sockets if s[1] not in ("127.0.0.1", "::1"))
        assert not exposed, f"listening beyond localhost: {exposed}"
        assert urlparse(client.scheduler.address).hostname == "127.0.0.1"
        if client.dashboard_link:
            assert urlparse(client.dashboard_link).hostname == "127.0.0.1"
    finally:
        if how == "command":
            context.__exit__(None, None, None)
        else:
            cluster = client.cluster
            client.close()
            cluster.close()


def test_local_cluster_dashboard_elsewhere_only_when_told(monkeypatch):
    """``dashboard_address`` is passed on as given (checked without opening any port)."""
    import distributed

    seen = []

    class FakeCluster:
        def __init__(self, **kwargs):
            seen.append(kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", FakeCluster)
    monkeypatch.setattr(distributed, "Client", lambda cluster, **kw: cluster)
    pickscale.local_cluster(1)
    pickscale.local_cluster(1, dashboard_address="0.0.0.0:8787")
    assert seen[0]["host"] == "127.0.0.1"
    assert str(seen[0]["dashboard_address"]).startswith("127.0.0.1")
    assert seen[1]["host"] == "127.0.0.1" and seen[1]["dashboard_address"] == "0.0.0.0:8787"


# --------------------------------------------------------------------------- a secured cluster, as the docs say


def test_the_docs_say_how_to_use_a_secured_cluster():
    section = SECURITY_DOC.read_text(encoding="utf-8")
    assert section.startswith("# Security")
    for needle in ("distributed.comm.tls", "Security(", "dask scheduler --tls-ca-file", "--tls-cert",
                   "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION", "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",
                   "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT", "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",
                   "127.0.0.1", "tomllib", "pickle"):
        assert needle in section, needle


def _console_script() -> list[str]:
    exe = Path(sys.executable).with_name("pickscale")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "import sys; from pickscale.cli import main; "
                                                                   "sys.exit(main())"]


@pytest.mark.cluster
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_the_documented_tls_recipe_scores_on_a_tls_cluster(tmp_path):
    """A scheduler that requires TLS: the documented environment variables are all the command needs;
    without them, exit status 2 and a message that names them."""
    from distributed import LocalCluster
    from distributed.security import Security

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    security = Security(tls_ca_file=str(cert), tls_scheduler_cert=str(cert), tls_scheduler_key=str(key),
                        tls_worker_cert=str(cert), tls_worker_key=str(key), tls_client_cert=str(cert),
                        tls_client_key=str(key), require_encryption=True)
    ref, picks = plain_catalogue(seed=2, n_datasets=1, n_stations=2, n_events=4).write_csv(tmp_path / "in")
    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=1, host="127.0.0.1", protocol="tls://",
                           security=security, dashboard_address="127.0.0.1:0", silence_logs=50)
    try:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        argv = _console_script() + ["score", "--reference", str(ref), "--picks", str(picks), "--scheduler", address,
                                    "--no-figures", "--quiet"]
        plain = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
        proc = subprocess.run(argv + ["--out", str(tmp_path / "no-certs")], env=plain, capture_output=True,
                              text=True, timeout=180)
        assert proc.returncode == 2, proc.stderr
        assert "cannot connect to the Dask scheduler at tls://" in proc.stderr
        assert "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "no-certs").exists()
        env = dict(plain, DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION="True",
                   DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(cert),
                   DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(cert),
                   DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=str(key))
        proc = subprocess.run(argv + ["--out", str(tmp_path / "run")], env=env, capture_output=True, text=True,
                              timeout=180)
        assert proc.returncode == 0, proc.stderr
    finally:
        cluster.close()
    got = pickscale.tables(pickscale.open_results(tmp_path / "run" / "results.zarr"))
    want = pickscale.tables(pickscale.score(str(ref), str(picks)))
    from pickscale.report.tables import to_csv_bytes

    assert {k: to_csv_bytes(v) for k, v in got.items()} == {k: to_csv_bytes(v) for k, v in want.items()}
