#!/usr/bin/env sh
# PostgreSQL's server programs, for the store tests: they start a throwaway cluster of their own
# (initdb and pg_ctl in a temporary folder, as the postgres user when run as root) and stop it at
# the end. As root without them, this installs Debian's postgresql. Without them and without
# root, it says how and goes on: those tests then skip, naming the package (CI makes such a skip fail).
set -eu

have_postgresql() {
  command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1
}

if ! have_postgresql; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "postgresql: installing Debian's postgresql"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
fi
if have_postgresql; then
  echo "postgresql: server programs found"
else
  echo "postgresql: not installed; install it (apt-get install postgresql), then run make setup again" >&2
fi
