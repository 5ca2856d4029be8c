#!/usr/bin/env sh
# Install the MCP servers written by others that the tests put behind the Recorder:
# the filesystem, "everything" and memory (knowledge graph) reference servers and Playwright's
# browser server (Node.js, from third_party/package-lock.json), the SQLite server (Python, MCP SDK
# 1.x, so in a virtual environment of its own, from third_party/sqlite/requirements.lock) and the
# fetch server (Python, in its own virtual environment too, from third_party/fetch/requirements.lock).
# Playwright's server drives the system's Chromium (Debian's chromium package): no browser is
# downloaded (--ignore-scripts). Node.js and npm come from the system's packages; as root
# without them, this installs Debian's. Without them and without root, it says how and goes on:
# the tests that need these servers then skip, naming this script (CI makes such a skip fail).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
third="$root/third_party"
python=${PYTHON:-python3}

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "third-party servers: installing Debian's nodejs and npm"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
fi
if command -v npm >/dev/null 2>&1; then
  echo "third-party servers: npm ci (filesystem, everything, memory, playwright)"
  npm ci --prefix "$third" --no-audit --no-fund --ignore-scripts --loglevel=error
else
  echo "third-party servers: no npm here; install Node.js and npm (apt-get install nodejs npm), then run make setup again" >&2
fi

echo "third-party servers: SQLite server in third_party/sqlite/.venv"
"$python" -m venv "$third/sqlite/.venv"
"$third/sqlite/.venv/bin/python" -m pip install --quiet --require-hashes -r "$third/sqlite/requirements.lock"

echo "third-party servers: fetch server in third_party/fetch/.venv"
"$python" -m venv "$third/fetch/.venv"
"$third/fetch/.venv/bin/python" -m pip install --quiet --require-hashes -r "$third/fetch/requirements.lock"
touch "$third/.installed"
