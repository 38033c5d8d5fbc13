#!/usr/bin/env bash
# AgentBar's two commands; each does its own set-up, idempotently.
#   bash tools/dev.sh serve [--port N]   serve the app, printing its local URL
#   bash tools/dev.sh test [pytest args] run every test (unit + end-to-end in Chromium, then in Firefox
#     ESR and WebKitGTK: tests/browsers, which `bash tools/dev.sh test tests/browsers` runs alone)
#   bash tools/dev.sh bench [--quick]    run the benchmarks (see README)
#   bash tools/dev.sh build              write dist/, the deployable offline build (see README)
#   bash tools/dev.sh llama [--tools]    build llama.cpp's server for the model tests (.ci/run: in the background)
#   bash tools/dev.sh serve --dist [--base /some/where/] [--connect-src ORIGIN]   serve dist/ (built first,
#     keeping its --connect-src unless given) like a host, with the headers the build wrote
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin=${PYTHON:-python3}

need() { command -v "$1" >/dev/null 2>&1; }

apt_install() { # apt_install PACKAGE... (root on these machines; sudo elsewhere)
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

setup_runtime() { # the vendored, pinned offline runtime under static/vendor/
  need npm || apt_install npm
  "$python_bin" tools/vendor.py
}

setup_venv() { # .venv with requirements-dev.txt, reinstalled only when that file changes
  local stamp=.venv/.requirements.sha256 want
  want=$(sha256sum requirements-dev.txt | cut -d' ' -f1)
  if [ ! -x .venv/bin/python ]; then "$python_bin" -m venv .venv; fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
    echo "$want" > "$stamp"
  fi
}

setup_browser() { # Debian's chromium: playwright cannot download its own browser here
  if [ -z "${AGENTBAR_CHROMIUM:-}" ] && ! need chromium; then apt_install chromium; fi
}

wants_engines() { # true when the run includes tests/browsers: no test path given, or one under it
  local arg paths=0
  for arg in "$@"; do
    case "$arg" in
      tests/browsers*|tests|tests/) return 0 ;;
      tests*|*.py*) paths=$((paths + 1)) ;;
    esac
  done
  [ "$paths" -eq 0 ]
}

setup_engines() { # Firefox ESR, WebKitGTK's driver and Xvfb (Debian's), and puppeteer-core (pinned by
  # tests/browsers/package-lock.json) for the cross-browser suite; Selenium comes with requirements-dev.txt
  if ! wants_engines "$@"; then return; fi
  local missing=()
  need firefox-esr || missing+=(firefox-esr)
  need WebKitWebDriver || missing+=(webkit2gtk-driver)
  need Xvfb || missing+=(xvfb)
  need node || missing+=(nodejs)
  need npm || missing+=(npm)
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
  "$python_bin" tools/engines.py --check || "$python_bin" tools/engines.py >/dev/null
}

bench_wants_engines() { # true when the bench runs its browsers part: not --quick (which skips it), and
  # no --only or one that names it
  local arg only="" next=0
  for arg in "$@"; do
    if [ "$next" -eq 1 ]; then only="$arg"; next=0; continue; fi
    case "$arg" in
      --quick) return 1 ;;
      --only) next=1 ;;
      --only=*) only="${arg#--only=}" ;;
    esac
  done
  [ -z "$only" ] || [[ ",$only," == *,browsers,* ]]
}

unit_only() { # true when every test path given is under tests/unit (no browser, no model server)
  local arg paths=0 unit=0
  for arg in "$@"; do
    case "$arg" in
      tests/unit*) paths=$((paths + 1)); unit=$((unit + 1)) ;;
      tests*|*.py*) paths=$((paths + 1)) ;;
    esac
  done
  [ "$paths" -gt 0 ] && [ "$paths" -eq "$unit" ]
}

setup_llama_tools() { # what llama.cpp's build needs (apt), when llama-server is not built yet
  if "$python_bin" tools/llama_server.py --check; then return; fi
  need cmake || apt_install cmake
  need g++ || apt_install g++
  need make || need ninja || apt_install make
}

setup_llama_server() { # llama.cpp's server and tiny models for the model tests (tools/llama_server.py),
  # cached outside the tree; not for a run of unit tests alone (they need no server), nor while
  # .ci/run builds it in the background (AGENTBAR_LLAMA_BACKGROUND: the llama-server tests wait for
  # that build, tools/llama_server.py's lock, and the other tests need not)
  if unit_only "$@" || [ -n "${AGENTBAR_LLAMA_BACKGROUND:-}" ]; then return; fi
  if ! "$python_bin" tools/llama_server.py --check; then  # the first time only: a C++ build (see README)
    setup_llama_tools
    "$python_bin" tools/llama_server.py >/dev/null
  fi
}

setup_couchdb_server() { # pouchdb-server (npm, pinned by tools/pouchdb-server/package-lock.json) for the
  # sync tests (tools/couchdb_server.py), cached outside the tree; not for unit tests alone
  if unit_only "$@"; then return; fi
  if ! "$python_bin" tools/couchdb_server.py --check; then
    need npm || apt_install npm
    "$python_bin" tools/couchdb_server.py >/dev/null
  fi
}

cmd=${1:-}
shift || true
case "$cmd" in
  serve)
    setup_runtime
    case " $* " in  # dist/ rebuilt first, with serve's --connect-src or else the one it was built with
      *" --dist "*) setup_venv; exec .venv/bin/python tools/serve.py --build "$@" ;;
    esac
    exec "$python_bin" tools/serve.py "$@"
    ;;
  build)
    setup_runtime
    setup_venv
    exec .venv/bin/python tools/build.py "$@"
    ;;
  test)
    setup_runtime
    setup_venv
    setup_browser
    setup_llama_server "$@"
    setup_couchdb_server "$@"
    setup_engines "$@"
    # pytest's rewritten test modules (and every import's bytecode) cached outside the tree, so a
    # second run skips the rewrite (~3 s of the unit suite) even where PYTHONDONTWRITEBYTECODE is set
    unset PYTHONDONTWRITEBYTECODE
    export PYTHONPYCACHEPREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/agentbar/pycache"
    if unit_only "$@"; then  # the browser's pytest plugins are not loaded for unit tests alone (~0.6 s)
      exec .venv/bin/python -m pytest -p no:playwright -p no:base_url "$@"
    fi
    exec .venv/bin/python -m pytest "$@"
    ;;
  llama)  # build llama-server and its models when missing (--tools: only install what the build needs)
    setup_llama_tools
    if [ "${1:-}" = --tools ]; then exit 0; fi
    exec "$python_bin" tools/llama_server.py
    ;;
  bench)
    setup_runtime
    setup_venv
    setup_browser
    if bench_wants_engines "$@"; then setup_engines tests/browsers; fi
    exec .venv/bin/python -m bench "$@"
    ;;
  *)
    echo "usage: bash tools/dev.sh serve|test|bench|build|llama [args]" >&2
    exit 2
    ;;
esac
