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

DATASET_ID = 198  # delta_elevators on OpenML (registry: target "Se")


def _arff_from_mirror(mirror_dir) -> str:
    df = read_arff(mirror_dir / "torgo" / "delta_elevators.arff")
    names = list(df.columns[:-1]) + ["Se"]
    head = ["@relation delta_elevators"] + [f"@attribute {n} numeric" for n in names] + ["@data"]
    rows = [",".join(repr(float(v)) for v in row) for row in df.to_numpy()]
    return "\n".join(head + rows) + "\n"


@pytest.fixture
def openml_server(mirror_dir):
    arff = _arff_from_mirror(mirror_dir).encode()
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            calls.append(self.path)
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            if self.path.split("?")[0] == f"/api/v1/xml/data/{DATASET_ID}":
                body = (
                    '<oml:data_set_description xmlns:oml="http://openml.org/openml">'
                    f"<oml:id>{DATASET_ID}</oml:id><oml:name>delta_elevators</oml:name><oml:version>1</oml:version>"
                    "<oml:description>test copy</oml:description><oml:format>ARFF</oml:format>"
                    "<oml:upload_date>2014-04-06T23:21:11</oml:upload_date><oml:licence>Public</oml:licence>"
                    f"<oml:url>{base}/data/v1/download/{DATASET_ID}/delta_elevators.arff</oml:url>"
                    f"<oml:file_id>{DATASET_ID}</oml:file_id><oml:default_target_attribute>Se</oml:default_target_attribute>"
                    "<oml:visibility>public</oml:visibility><oml:status>active</oml:status>"
                    "</oml:data_set_description>").encode()
                ctype = "text/xml"
            elif self.path.startswith(f"/data/v1/download/{DATASET_ID}/"):
                body, ctype = arff, "text/plain"
            else:
                body = (b'<oml:error xmlns:oml="http://openml.org/openml"><oml:code>111</oml:code>'
                        b"<oml:message>Unknown dataset</oml:message></oml:error>")
                self.send_response(412)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml", calls
    server.shutdown()
    server.server_close()


def test_download_through_openml_client_matches_mirror(openml_server, mirror_dir, monkeypatch):
    url, calls = openml_server
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    downloaded = load("delta-elevators")          # no mirror configured → download
    assert downloaded.source == "openml"
    assert any(c.startswith(f"/api/v1/xml/data/{DATASET_ID}") for c in calls)
    mirror = load("delta-elevators", mirror_dir)
    np.testing.assert_allclose(downloaded.X, mirror.X)
    np.testing.assert_allclose(downloaded.y, mirror.y)
    # the second load is served by the local cache, without a request
    n_calls = len(calls)
    again = load("delta-elevators")
    assert again.source == "cache" and len(calls) == n_calls
    np.testing.assert_array_equal(again.y, downloaded.y)


def test_server_error_becomes_a_clear_unavailable_message(openml_server, monkeypatch):
    url, _ = openml_server
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", url)
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    from rfbench.errors import DataUnavailable

    with pytest.raises(DataUnavailable, match="kinematics.*not available"):
        load("kinematics")  # id 189 is unknown to this server


def test_download_from_original_url_archive(mirror_dir, tmp_path, monkeypatch):
    """A Torgo-style .tgz (whitespace .data member, target last) served on 127.0.0.1."""
    import io
    import tarfile

    from rfbench import registry

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
        registry._datasets.cache_clear()
        got = load("da")
        assert got.source == "url"
        np.testing.assert_allclose(got.X, df.to_numpy()[:, :-1])
        np.testing.assert_allclose(got.y, df.to_numpy()[:, -1])
    finally:
        server.shutdown()
        server.server_close()
        registry._datasets.cache_clear()
