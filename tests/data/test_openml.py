"""The OpenML download path, with the real ``openml`` client against a local OpenML-compatible server.

The server (127.0.0.1, ephemeral port) serves a dataset description and an ARFF file built from a
mirror file, following the HTTP calls that openml-python 0.15 makes in ``get_dataset``.
"""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rfbench.data import load
from rfbench.data.arff import read_arff
from rfbench.registry import load as load_registry
from tests.fake_openml import serve_openml

DATASET_ID = 198  # delta_elevators on OpenML (registry: target "Se")


def _arff_from_mirror(mirror_dir) -> str:
    df = read_arff(mirror_dir / "torgo" / "delta_elevators.arff")
    names = list(df.columns[:-1]) + ["Se"]
    head = ["@relation delta_elevators"] + [f"@attribute {n} numeric" for n in names] + ["@data"]
    rows = [",".join(repr(float(v)) for v in row) for row in df.to_numpy()]
    return "\n".join(head + rows) + "\n"


@pytest.fixture
def openml_server(mirror_dir):
    server, calls = serve_openml({DATASET_ID: ("delta_elevators", _arff_from_mirror(mirror_dir).encode(), "Se")})
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml", calls
    server.shutdown()
    server.server_close()


def test_download_through_openml_client_matches_mirror(openml_server, mirror_dir, monkeypatch):
    url, calls = openml_server
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    downloaded = load("delta-elevators", registry=load_registry())          # no mirror configured → download
    assert downloaded.source == "openml"
    assert any(c.startswith(f"/api/v1/xml/data/{DATASET_ID}") for c in calls)
    mirror = load("delta-elevators", mirror_dir, registry=load_registry())
    np.testing.assert_allclose(downloaded.X, mirror.X)
    np.testing.assert_allclose(downloaded.y, mirror.y)
    # the second load is served by the local cache, without a request
    n_calls = len(calls)
    again = load("delta-elevators", registry=load_registry())
    assert again.source == "cache" and len(calls) == n_calls
    np.testing.assert_array_equal(again.y, downloaded.y)


def test_server_error_becomes_a_clear_unavailable_message(openml_server, monkeypatch):
    url, _ = openml_server
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", url)
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    from rfbench.errors import DataUnavailable

    with pytest.raises(DataUnavailable, match="kinematics.*not available"):
        load("kinematics", registry=load_registry())  # id 189 is unknown to this server


def test_download_from_original_url_archive(mirror_dir, tmp_path, monkeypatch):
    """A Torgo-style .tgz (whitespace .data member, target last) served on 127.0.0.1."""
    import io
    import tarfile


    df = read_arff(mirror_dir / "torgo" / "delta_ailerons.arff")
    text = "\n".join(" ".join(repr(float(v)) for v in row) for row in df.to_numpy()) + "\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = text.encode()
        info = tarfile.TarInfo("Ailerons/delta_ailerons.data")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    payload = buf.getvalue()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200 if self.path.endswith(".tgz") else 404)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/Regression/delta_ailerons.tgz"
        reg = tmp_path / "datasets.yaml"
        reg.write_text("suites: {s: test}\ndatasets:\n  da:\n    task: regression\n    suites: [s]\n"
                       "    shape: [7129, 5]\n    target: class\n"
                       f"    url: {url}\n    download: {{format: whitespace, member: Ailerons/delta_ailerons.data}}\n")
        monkeypatch.setenv("RFBENCH_DATASETS_YAML", str(reg))
        got = load("da", registry=load_registry())
        assert got.source == "url"
        np.testing.assert_allclose(got.X, df.to_numpy()[:, :-1])
        np.testing.assert_allclose(got.y, df.to_numpy()[:, -1])
    finally:
        server.shutdown()
        server.server_close()


# OpenML 1461 (bank marketing): 7 numeric and 9 nominal inputs, class 1/2 = no/yes
BANK_NOMINAL = {
    "V2": ["admin.", "blue-collar", "entrepreneur", "housemaid", "management", "retired",
           "self-employed", "services", "student", "technician", "unemployed", "unknown"],
    "V3": ["divorced", "married", "single"], "V4": ["primary", "secondary", "tertiary", "unknown"],
    "V5": ["no", "yes"], "V7": ["no", "yes"], "V8": ["no", "yes"],
    "V9": ["cellular", "telephone", "unknown"],
    "V11": ["apr", "aug", "dec", "feb", "jan", "jul", "jun", "mar", "may", "nov", "oct", "sep"],
    "V16": ["failure", "other", "success", "unknown"],
}
BANK_NUMERIC = ["V1", "V6", "V10", "V12", "V13", "V14", "V15"]


def test_bankmarketing_through_openml_one_hot_and_binarised(monkeypatch, tmp_path):
    """The one dataset of the gbrff suite that only OpenML has: a file with OpenML 1461's schema
    (random values, the real row count) must load as the registry's 45211 × 51 one-hot design
    with class "2" (yes) as +1."""
    rng = np.random.default_rng(0)
    m = 45211
    cols = [f"V{j}" for j in range(1, 17)]
    values = {c: rng.integers(0, len(BANK_NOMINAL[c]), m) if c in BANK_NOMINAL else rng.integers(-50, 500, m)
              for c in cols}
    cls = np.where(rng.random(m) < 0.117, "2", "1")
    head = ["@relation bank-marketing"]
    for c in cols:
        kind = "{" + ",".join(BANK_NOMINAL[c]) + "}" if c in BANK_NOMINAL else "numeric"
        head.append(f"@attribute {c} {kind}")
    head += ["@attribute Class {1,2}", "@data"]
    rows = [",".join([*(BANK_NOMINAL[c][values[c][i]] if c in BANK_NOMINAL else str(values[c][i])
                        for c in cols), cls[i]]) for i in range(m)]
    arff = ("\n".join(head + rows) + "\n").encode()
    server, calls = serve_openml({1461: ("bank-marketing", arff, "Class")})
    try:
        monkeypatch.setenv("RFBENCH_OPENML_SERVER", f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
        loaded = load("bankmarketing", registry=load_registry())
    finally:
        server.shutdown()
        server.server_close()
    assert loaded.source == "openml" and loaded.X.shape == (m, 51)
    np.testing.assert_array_equal(loaded.y, np.where(cls == "2", 1.0, -1.0))
    # every nominal input is one block of 0/1 columns with a single one per row, so a row sums to
    # its numeric inputs plus one per nominal input
    numeric_sum = sum(values[c] for c in BANK_NUMERIC).astype(float)
    np.testing.assert_allclose(loaded.X.sum(axis=1), numeric_sum + len(BANK_NOMINAL))
    assert set(np.unique(loaded.X)) >= {0.0, 1.0}


def test_concurrent_downloads_of_one_cache_take_turns(openml_server, tmp_path, monkeypatch):
    """A download waits while another invocation holds the cache's lock (two lanes fetching the
    same id would otherwise delete each other's partial files)."""
    import fcntl
    import time

    from rfbench.data.openml_source import fetch_openml_frame

    url, calls = openml_server
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    cache = tmp_path / "oml"
    cache.mkdir()
    holder = open(cache / ".download.lock", "w")
    fcntl.flock(holder, fcntl.LOCK_EX)
    result = {}
    worker = threading.Thread(target=lambda: result.update(frame=fetch_openml_frame(DATASET_ID, cache)))
    try:
        worker.start()
        time.sleep(0.5)
        assert not calls and worker.is_alive()          # blocked before any request
    finally:
        holder.close()                                  # release: the waiting download proceeds
        worker.join(30)
    assert calls and len(result["frame"]) > 0
