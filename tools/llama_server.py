"""Build llama.cpp's ``llama-server`` and a tiny model for the end-to-end tests.

The model tests run against llama.cpp's own C++ server, not only against
``tools/fake_openai.py`` (DESIGN.md §12, "What real servers do"). This script,
standard library only, makes both things that takes, idempotently:

- the server: llama.cpp's tree comes from the PyPI sdist of
  ``llama-cpp-python`` (``pip download --no-deps --no-binary :all:``, the
  version and sha256 pinned in ``tools/llama_server.lock.json``); its own CMake
  builds just the ``llama-server`` target (CPU only, no network code, no web
  UI, ``nice``, ``-j2``): one static binary;
- the model: a random-weight llama-architecture GGUF of a few hundred tokens,
  written by the pinned PyPI ``gguf`` package in a virtual environment of its
  own, with a chatml chat template whose tools section asks for Hermes
  ``<tool_call>`` blocks. Two variants: ``plain`` (its output weights favour
  ``<|im_end|>``, so replies end after a few tokens) and ``tool`` (they favour
  a fixed ``<tool_call>{…}</tool_call>`` text, so a request with tools gets a
  ``regenerate_scene`` call).

Both are cached outside the work tree (``$AGENTBAR_CACHE``, else
``$XDG_CACHE_HOME/agentbar``, else ``~/.cache/agentbar``), keyed by the
sdist's sha256 and the build options (the model: by the ``gguf`` pin and the
model recipe), so a second run, another checkout or CI on the same machine
reuse them. A build in progress holds a lock file; a second caller waits.

Usage::

    python tools/llama_server.py            # build what is missing; print the binary's path
    python tools/llama_server.py --model plain   # ... and print that model's path
    python tools/llama_server.py --check    # exit 1 when the binary or a model is missing (no build)

Raises ``SystemExit`` with a message on a checksum mismatch, a failed
download or a failed build.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path


if __package__:  # imported as tools.llama_server (tests, tools/couchdb_server.py)
    from tools.vendor import sha256_of
else:  # run as a script (its folder is on sys.path)
    from vendor import sha256_of

ROOT = Path(__file__).resolve().parent.parent
LOCK_PATH = Path(__file__).resolve().parent / "llama_server.lock.json"
MODEL_SCRIPT = Path(__file__).resolve().parent / "tiny_gguf.py"
MODEL_VARIANTS = ("plain", "tool", "endless")


def cache_root() -> Path:
    """The cache folder shared by every checkout on this machine (outside the work tree)."""
    explicit = os.environ.get("AGENTBAR_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentbar"


def load_lock() -> dict:
    """The pins of ``tools/llama_server.lock.json`` as a dict."""
    return json.loads(LOCK_PATH.read_text(encoding="utf-8"))


def _key(*parts: object) -> str:
    """A short stable hex digest of ``parts`` (their JSON), for cache folder names."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _log(message: str) -> None:
    print(f"llama-server: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _exclusive(path: Path):
    """Hold an exclusive ``flock`` on ``path`` (created), so parallel callers build once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def server_dir(lock: dict | None = None) -> Path:
    """Where the binary of these pins lives: keyed by the sdist's sha256, the CMake options and target."""
    lock = lock or load_lock()
    key = _key(lock["sdist"]["sha256"], lock["cmake"], lock["target"])
    return cache_root() / "llama-server" / f"{lock['sdist']['version']}-{key}"


def server_binary(lock: dict | None = None) -> Path:
    """Path of the cached ``llama-server`` binary (it may not exist yet)."""
    return server_dir(lock) / "bin" / "llama-server"


def fetch_sdist(lock: dict) -> Path:
    """The pinned sdist in the cache, downloaded by ``pip download`` when missing; sha256 checked.

    Raises ``SystemExit`` on a failed download or a checksum mismatch.
    """
    pin = lock["sdist"]
    folder = cache_root() / "sdist"
    path = folder / pin["file"]
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        _log(f"downloading {pin['name']}=={pin['version']} (sdist, ~77 MB)")
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                 "--no-deps", "--no-binary", ":all:",
                 f"{pin['name']}=={pin['version']}", "-d", tmp],
                check=False)
            got = Path(tmp) / pin["file"]
            if result.returncode != 0 or not got.exists():
                raise SystemExit(f"llama-server: pip download of {pin['name']}=={pin['version']} failed")
            got.replace(path)
    actual = sha256_of(path)
    if actual != pin["sha256"]:
        path.unlink()
        raise SystemExit(f"llama-server: {pin['file']} has sha256 {actual}, the lock pins {pin['sha256']}")
    return path


def build_server(lock: dict | None = None) -> Path:
    """The ``llama-server`` binary of the pinned sdist, built once and cached; its path.

    Extracts the sdist's llama.cpp tree to a scratch folder, configures it with
    the lock's CMake options and builds only the lock's target (``nice -n 10``,
    ``-j2``), then moves the binary into ``server_dir()``. Raises
    ``SystemExit`` when the build fails (its log stays in the cache folder).
    """
    lock = lock or load_lock()
    binary = server_binary(lock)
    if binary.exists():
        return binary
    folder = server_dir(lock)
    with _exclusive(folder.parent / f"{folder.name}.lock"):
        if binary.exists():
            return binary
        sdist = fetch_sdist(lock)
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / "build.log"
        started = time.monotonic()
        _log(f"building {lock['target']} from {sdist.name} (first time only, 7 to 30 min on two cores; log: {log_path})")
        with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
            scratch = Path(tmp)
            prefix = f"{sdist.name.removesuffix('.tar.gz')}/{lock['sdist']['tree']}/"
            with tarfile.open(sdist) as archive:
                members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
                archive.extractall(scratch, members=members, filter="data")
            source = scratch / prefix
            build = scratch / "build"
            nice = ["nice", "-n", "10"] if shutil.which("nice") else []
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            steps = [
                [*nice, "cmake", "-S", str(source), "-B", str(build), *generator, *lock["cmake"]],
                [*nice, "cmake", "--build", str(build), "--target", lock["target"], "-j2"],
            ]
            with log_path.open("w") as log:
                for step in steps:
                    log.write("$ " + " ".join(step) + "\n")
                    log.flush()
                    if subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, check=False).returncode:
                        raise SystemExit(f"llama-server: build failed, see {log_path}")
            built = build / "bin" / lock["target"]
            if not built.exists():
                raise SystemExit(f"llama-server: the build made no {built}")
            binary.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(built), str(binary))
        minutes = (time.monotonic() - started) / 60
        (folder / "build-time.txt").write_text(f"{minutes:.1f} min\n", encoding="utf-8")
        _log(f"built {binary} in {minutes:.1f} min")
    return binary


def gguf_python(lock: dict | None = None) -> Path:
    """The Python of a virtual environment holding the pinned ``gguf`` wheel (sha256 checked) and its pins.

    Created once under the cache; raises ``SystemExit`` when a download fails
    or the wheel's sha256 is not the lock's.
    """
    lock = lock or load_lock()
    pin = lock["gguf"]
    env = cache_root() / "gguf-env" / f"{pin['version']}-{_key(pin, sys.version_info[:2])}"
    python = env / "bin" / "python"
    done = env / ".complete"
    if done.exists():
        return python
    with _exclusive(env.parent / f"{env.name}.lock"):
        if done.exists():
            return python
        _log(f"making a virtual environment with gguf=={pin['version']} ({env})")
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        pip = [str(python), "-m", "pip", "--quiet", "--disable-pip-version-check"]
        with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
            fetched = subprocess.run([*pip, "download", "--no-deps", f"{pin['name']}=={pin['version']}", "-d", tmp],
                                     check=False)
            wheel = Path(tmp) / pin["file"]
            if fetched.returncode != 0 or not wheel.exists():
                raise SystemExit(f"llama-server: pip download of {pin['name']}=={pin['version']} failed")
            actual = sha256_of(wheel)
            if actual != pin["sha256"]:
                raise SystemExit(f"llama-server: {pin['file']} has sha256 {actual}, the lock pins {pin['sha256']}")
            installed = subprocess.run([*pip, "install", "--no-deps", str(wheel), *pin["with"]], check=False)
            if installed.returncode != 0:
                raise SystemExit("llama-server: installing gguf and its pins failed")
        done.write_text("ok\n", encoding="utf-8")
    return python


def model_path(variant: str, lock: dict | None = None) -> Path:
    """Path of the cached tiny model ``variant`` (keyed by the gguf pin and the writer's source)."""
    lock = lock or load_lock()
    key = _key(lock["gguf"], hashlib.sha256(MODEL_SCRIPT.read_bytes()).hexdigest())
    return cache_root() / "models" / key / f"tiny-{variant}.gguf"


def make_model(variant: str, lock: dict | None = None) -> Path:
    """The tiny model ``variant`` (``plain``, ``tool``, ``endless``: ``tools/tiny_gguf.py``), written once; its path."""
    if variant not in MODEL_VARIANTS:
        raise SystemExit(f"llama-server: unknown model {variant!r} (one of {', '.join(MODEL_VARIANTS)})")
    lock = lock or load_lock()
    path = model_path(variant, lock)
    if path.exists():
        return path
    python = gguf_python(lock)
    with _exclusive(path.parent / ".lock"):
        if not path.exists():
            partial = path.with_suffix(".partial")
            subprocess.run([str(python), str(MODEL_SCRIPT), variant, str(partial)], check=True,
                           stdout=subprocess.DEVNULL)
            partial.replace(path)
    return path


def ensure() -> tuple[Path, dict[str, Path]]:
    """Build or find everything: ``(binary, {variant: model path})``; raises ``SystemExit`` on failure."""
    lock = load_lock()
    binary = build_server(lock)
    return binary, {variant: make_model(variant, lock) for variant in MODEL_VARIANTS}


def ready() -> bool:
    """True when the binary and every model are cached (nothing would be built)."""
    lock = load_lock()
    return server_binary(lock).exists() and all(model_path(v, lock).exists() for v in MODEL_VARIANTS)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """A running ``llama-server`` on 127.0.0.1 (started by ``start``).

    ``origin`` is ``http://127.0.0.1:<port>``, ``base_url`` that plus ``/v1``;
    ``alias`` the model name it reports; ``log()`` its standard output and
    error so far (text); ``stop()`` ends it (terminate, then kill after 10 s).
    """

    def __init__(self, process: subprocess.Popen, port: int, alias: str, log_path: Path) -> None:
        self.process = process
        self.port = port
        self.alias = alias
        self.origin = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.origin}/v1"
        self.log_path = log_path

    def log(self) -> str:
        """What the server wrote so far (stdout and stderr, UTF-8 with replacement)."""
        return self.log_path.read_bytes().decode("utf-8", "replace")

    def stop(self) -> None:
        """Terminate the server and wait for it (kill after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __repr__(self) -> str:
        return f"Server({self.origin}, alias={self.alias!r})"


def start(model: str = "plain", *args: str, alias: str | None = None, log_dir: Path | None = None,
          timeout_s: float = 120.0) -> Server:
    """Start the cached ``llama-server`` on a free 127.0.0.1 port serving tiny model ``model``.

    ``args`` are extra server options (``-c 512``, ``--no-jinja``,
    ``--cors-origins …``); the server always runs with ``-t 1`` (one thread: two
    busy cores make more threads slower), one slot (``-np 1``: ``-c`` is the
    context of each request), no web UI and ``-a alias`` (default
    ``tiny-<model>``, the model name it reports). Waits until ``GET /health`` answers 200. Raises
    ``RuntimeError`` (with the server's log) when it exits or is not ready
    within ``timeout_s`` seconds, ``SystemExit`` when nothing is built.
    """
    lock = load_lock()
    binary, path = server_binary(lock), model_path(model, lock)
    if not binary.exists() or not path.exists():
        raise SystemExit("llama-server: not built; run `python tools/llama_server.py` first")
    alias = alias or f"tiny-{model}"
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="llama-server-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    for _attempt in range(3):  # the port may be taken between probing and binding
        port = free_port()
        log_path = log_dir / f"{alias}-{port}.log"
        command = [str(binary), "-m", str(path), "--host", "127.0.0.1", "--port", str(port), "-t", "1",
                   "-a", alias, "-np", "1", "--no-webui", *args]
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        server = Server(process, port, alias, log_path)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{server.origin}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return server
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        server.stop()
        if "bind" not in server.log().lower():
            raise RuntimeError(f"llama-server did not start: {' '.join(command)}\n{server.log()[-4000:]}")
    raise RuntimeError(f"llama-server found no free port:\n{server.log()[-4000:]}")


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Build llama-server and the tiny test models (cached).")
    parser.add_argument("--check", action="store_true", help="exit 1 when something is not built yet")
    parser.add_argument("--model", choices=MODEL_VARIANTS, help="print this model's path as well")
    options = parser.parse_args(argv)
    if options.check:
        return 0 if ready() else 1
    binary, models = ensure()
    print(binary)
    if options.model:
        print(models[options.model])
    return 0


if __name__ == "__main__":
    sys.exit(main())
