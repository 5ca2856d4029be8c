#!/usr/bin/env sh
# mypy --strict over hatp_journal.*: link each top-level folder under its import name first.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tree="$root/build/typecheck/hatp_journal"
mkdir -p "$tree"
for folder in _shared toolkit servers recorder scenarios conformance; do
  ln -sfn "$root/$folder" "$tree/$folder"
done
cd "$root"
exec "${PYTHON:-.venv/bin/python}" -m mypy "$@"
