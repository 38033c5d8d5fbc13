"""The development server: the runtime's MIME types, and nothing from dot folders."""

import threading
import urllib.error
import urllib.request

import pytest

from tools.serve import make_server


@pytest.fixture
def base_url():
    server = make_server("127.0.0.1", 0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_page_and_module_scripts_are_served_with_javascript_types(base_url):
    with urllib.request.urlopen(base_url + "index.html") as response:
        assert response.status == 200 and "text/html" in response.headers["Content-Type"]
    with urllib.request.urlopen(base_url + "static/boot.js") as response:
        assert response.headers["Content-Type"].startswith("text/javascript")


@pytest.mark.parametrize("path", [".git/HEAD", "static/../.git/HEAD", ".venv/pyvenv.cfg", "pyproject.toml/../.git/config"])
def test_dot_folders_are_not_served(base_url, path):
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(base_url + path)
    assert error.value.code == 404
