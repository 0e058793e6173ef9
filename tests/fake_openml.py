"""A fake OpenML server on 127.0.0.1 for the download tests (the calls openml-python 0.15 makes
in get_dataset): the real fetch code runs against it, offline."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_openml(datasets: dict[int, tuple[str, bytes, str]]):
    """An OpenML-compatible server on 127.0.0.1 for ``{id: (name, arff bytes, default target)}``;
    returns (server, list of requested paths). Unknown ids get OpenML's 412 error."""
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            calls.append(self.path)
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            path = self.path.split("?")[0]
            for did, (name, arff, target) in datasets.items():
                if path == f"/api/v1/xml/data/{did}":
                    body = (
                        '<oml:data_set_description xmlns:oml="http://openml.org/openml">'
                        f"<oml:id>{did}</oml:id><oml:name>{name}</oml:name><oml:version>1</oml:version>"
                        "<oml:description>test copy</oml:description><oml:format>ARFF</oml:format>"
                        "<oml:upload_date>2014-04-06T23:21:11</oml:upload_date><oml:licence>Public</oml:licence>"
                        f"<oml:url>{base}/data/v1/download/{did}/{name}.arff</oml:url>"
                        f"<oml:file_id>{did}</oml:file_id><oml:default_target_attribute>{target}</oml:default_target_attribute>"
                        "<oml:visibility>public</oml:visibility><oml:status>active</oml:status>"
                        "</oml:data_set_description>").encode()
                    ctype = "text/xml"
                    break
                if path.startswith(f"/data/v1/download/{did}/"):
                    body, ctype = arff, "text/plain"
                    break
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, calls
