"""The development server: the runtime's MIME types, and nothing from dot folders."""

import json
import threading
import urllib.error
import urllib.request

import pytest

from tools.serve import SHUTDOWN_POLL_S, make_server


@pytest.fixture
def served_url():
    """(Not ``base_url``: that name is pytest-base-url's session fixture, which pytest-playwright uses.)"""
    server = make_server("127.0.0.1", 0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_page_and_module_scripts_are_served_with_javascript_types(served_url):
    with urllib.request.urlopen(served_url + "index.html") as response:
        assert response.status == 200 and "text/html" in response.headers["Content-Type"]
    with urllib.request.urlopen(served_url + "static/boot.js") as response:
        assert response.headers["Content-Type"].startswith("text/javascript")


@pytest.mark.parametrize("path", [".git/HEAD", "static/../.git/HEAD", ".venv/pyvenv.cfg", "pyproject.toml/../.git/config"])
def test_dot_folders_are_not_served(served_url, path):
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(served_url + path)
    assert error.value.code == 404


@pytest.fixture
def dist_tree(tmp_path):
    """A folder with a file and its precompressed variants, as tools/build.py writes them."""
    import gzip

    import brotli

    body = b"console.log('agentbar');\n" * 100
    (tmp_path / "static").mkdir()
    (tmp_path / "static/app.js").write_bytes(body)
    (tmp_path / "static/app.js.br").write_bytes(brotli.compress(body))
    (tmp_path / "static/app.js.gz").write_bytes(gzip.compress(body))
    (tmp_path / "static/plain.css").write_bytes(b"body{}")
    (tmp_path / "index.html").write_bytes(b"<!doctype html><title>x</title>")
    return tmp_path, body


def _serve(root, **kwargs):
    server = make_server("127.0.0.1", 0, root=root, quiet=True, **kwargs)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]


def _get(url, **headers):
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers))


@pytest.mark.parametrize("accept, encoding", [("br, gzip", "br"), ("gzip", "gzip"), ("gzip;q=1, br;q=0", "gzip"),
                                              ("identity", None), ("", None)])
def test_precompressed_variant_is_served_when_accepted(dist_tree, accept, encoding):
    import gzip

    import brotli

    root, body = dist_tree
    server, url = _serve(root)
    try:
        with _get(url + "/static/app.js", **{"Accept-Encoding": accept}) as response:
            data = response.read()
            assert response.headers.get("Content-Encoding") == encoding
            assert response.headers["Content-Type"].startswith("text/javascript")
            decoded = {"br": brotli.decompress, "gzip": gzip.decompress, None: lambda d: d}[encoding](data)
            assert decoded == body
            assert int(response.headers["Content-Length"]) == len(data)
            if encoding:
                assert response.headers["Vary"] == "Accept-Encoding"
        with _get(url + "/static/plain.css", **{"Accept-Encoding": accept}) as response:  # no variant: as is
            assert response.headers.get("Content-Encoding") is None and response.read() == b"body{}"
    finally:
        server.shutdown()
        server.server_close()


def test_precompressed_variant_answers_if_modified_since_with_304(dist_tree):
    root, _ = dist_tree
    server, url = _serve(root)
    try:
        with _get(url + "/static/app.js", **{"Accept-Encoding": "br"}) as response:
            last_modified = response.headers["Last-Modified"]
        with pytest.raises(urllib.error.HTTPError) as error:
            _get(url + "/static/app.js", **{"Accept-Encoding": "br", "If-Modified-Since": last_modified})
        assert error.value.code == 304
    finally:
        server.shutdown()
        server.server_close()


def test_sub_path_serves_only_under_it_and_sends_the_given_headers(dist_tree):
    root, body = dist_tree
    server, url = _serve(root, base="/some/where/", headers={"Content-Security-Policy": "default-src 'none'"})
    try:
        with _get(url + "/some/where/") as response:
            assert response.read().startswith(b"<!doctype html>")
            assert response.headers["Content-Security-Policy"] == "default-src 'none'"
        with _get(url + "/some/where/static/app.js") as response:
            assert response.read() == body
        with _get(url + "/some/where") as response:  # redirected to the folder
            assert response.geturl().endswith("/some/where/")
        for outside in ["/index.html", "/static/app.js", "/some/index.html"]:
            with pytest.raises(urllib.error.HTTPError) as error:
                _get(url + outside)
            assert error.value.code == 404
    finally:
        server.shutdown()
        server.server_close()


def test_byte_counter_sums_bodies_sent(dist_tree):
    root, body = dist_tree
    server, url = _serve(root, count_bytes=True)
    try:
        with _get(url + "/static/app.js") as response:
            response.read()
        with _get(url + "/static/app.js", **{"Accept-Encoding": "br"}) as response:
            compressed = response.read()
        assert server.bytes_sent[0] == len(body) + len(compressed)
    finally:
        server.shutdown()
        server.server_close()


def test_a_build_admitting_an_origin_is_served_with_that_origin_in_every_files_header(tmp_path, monkeypatch):
    """README "Deploying": the header sent with every file of dist/ (the sync worker follows only the
    one sent with static/sync-worker.js) carries the build's own policy, the one in its index.html."""
    from tests.unit.test_build import tree as tree_fixture
    from tools import build, serve

    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    out = tmp_path / "dist"
    build.build(out, root=tree_fixture.__wrapped__(tmp_path), quiet=True, connect=["http://127.0.0.1:5993"])
    headers = serve.dist_headers(out)
    meta = (out / "index.html").read_text().split('http-equiv="Content-Security-Policy" content="')[1].split('"')[0]
    assert "connect-src 'self' http://127.0.0.1:5993;" in meta
    server, url = _serve(out, headers=headers)
    try:
        for rel in ["", "index.html", "static/sync-worker.js", "sw.js", "static/vendor/pouchdb/pouchdb.min.js"]:
            with _get(f"{url}/{rel}", **{"Accept-Encoding": "br"}) as response:
                policy = response.headers["Content-Security-Policy"]
            assert policy.startswith(meta + ";") and "frame-ancestors 'none'" in policy, rel
    finally:
        server.shutdown()
        server.server_close()


def test_serve_dist_rebuilds_with_its_own_connect_src_or_else_the_one_dist_was_built_with(tmp_path, monkeypatch):
    """``bash tools/dev.sh serve --dist`` (``serve.py --dist --build``): the rebuild keeps the options of
    the build in dist/ unless serve is given origins of its own (which it passes on), and the server
    sends the headers that build wrote, not a fixed set."""
    from tools import build, serve

    calls, served = [], []
    monkeypatch.setattr(build, "main", lambda argv: calls.append(argv) or 0)

    class Stub:
        server_address = ("127.0.0.1", 1)

        def serve_forever(self):
            raise KeyboardInterrupt

        def server_close(self):
            pass

    monkeypatch.setattr(serve, "make_server", lambda *a, **k: served.append(k["headers"]) or Stub())
    written = {"Content-Security-Policy": "connect-src 'self' http://127.0.0.1:5993; frame-ancestors 'none'"}
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist/index.html").write_text("<!doctype html>")
    (tmp_path / "dist/headers.json").write_text(json.dumps(written))
    monkeypatch.setattr(serve, "ROOT", tmp_path)
    serve.main(["--dist", "--build", "--quiet"])
    serve.main(["--dist", "--build", "--connect-src", "http://127.0.0.1:5993", "--quiet"])
    assert calls == [["--keep-connect-src"], ["--keep-connect-src", "--connect-src", "http://127.0.0.1:5993"]]
    assert served == [written, written]
