#!/usr/bin/env bash
# Prints an admin DATABASE_URL for a PostgreSQL that answers, in this order:
#   1. $DATABASE_URL, if set and it answers;
#   2. the machine's server on 127.0.0.1:5432 (started with pg_ctlcluster if
#      a cluster exists but is down);
#   3. a private trust-auth cluster on port 55432, created with the machine's
#      binaries (apt-get installs them when missing, or when only the client
#      is there), under .data/pg; as root, under the postgres user's home
#      instead when the server cannot reach .data (a clone under /root).
# Diagnostics go to stderr; stdout carries only the URL.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
log() { echo "postgres.sh: $*" >&2; }

answers() { # $1 = URL
  command -v psql >/dev/null 2>&1 || return 1
  PGCONNECT_TIMEOUT=3 psql "$1" -Atqc 'select 1' >/dev/null 2>&1
}

if [ -n "${DATABASE_URL:-}" ]; then
  if answers "$DATABASE_URL"; then echo "$DATABASE_URL"; exit 0; fi
  log "DATABASE_URL is set but does not answer"; exit 1
fi

machine="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
if answers "$machine"; then echo "$machine"; exit 0; fi

if [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql 2>/dev/null)" ] && command -v pg_ctlcluster >/dev/null; then
  ver=$(ls /etc/postgresql | sort -V | tail -n1)
  log "starting the machine's cluster $ver/main"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 2>&1 || true
  for _ in $(seq 1 30); do answers "$machine" && { echo "$machine"; exit 0; }; sleep 0.5; done
  log "the machine's cluster did not answer with trust auth; using a private cluster"
fi

# The newest server binaries: a version with only the client installed
# (postgresql-client puts psql there too) has no initdb.
server_bindir() {
  local initdb
  initdb=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n1 || true)
  [ -n "$initdb" ] && dirname "$initdb"
}
bindir=$(server_bindir || true)
if [ -z "$bindir" ] || ! command -v psql >/dev/null || ! id postgres >/dev/null 2>&1; then
  log "installing PostgreSQL from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq postgresql postgresql-client >&2
  bindir=$(server_bindir)
  # Debian's own cluster, if the package made one, trusts only local
  # socket peers by default, so the URL above may still not answer.
  ver=$(basename "$(dirname "$bindir")")
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 2>&1 || true
  answers "$machine" && { echo "$machine"; exit 0; }
fi

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
data="$root/.data/pg"
port=55432
private="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
if answers "$private"; then echo "$private"; exit 0; fi
mkdir -p "$data"
# The server runs as the postgres user, which must be able to walk into
# .data (not list it: every secret inside has its own 0600/0700 mode).
chmod 0711 "$root/.data"
if [ "$(id -u)" = 0 ] && ! as_pg test -x "$root/.data"; then
  # A folder above the clone is closed to it (a clone under /root).
  home=$(getent passwd postgres | cut -d: -f6)
  data="$home/payorch-$(printf '%s' "$root" | sha256sum | cut -c1-12)"
  log "the postgres user cannot reach $root/.data; the private cluster lives in $data"
  mkdir -p "$data"
fi
chown postgres:postgres "$data" 2>/dev/null || true
chmod 0700 "$data"
if [ ! -f "$data/PG_VERSION" ]; then
  log "initdb private cluster in $data"
  as_pg "$bindir/initdb" -D "$data" -U postgres -A trust --no-instructions >&2
fi
as_pg "$bindir/pg_ctl" -D "$data" -l "$data/server.log" -o "-p $port -k /tmp -c listen_addresses=127.0.0.1" -w start >&2
answers "$private" && { echo "$private"; exit 0; }
log "no PostgreSQL could be started"; exit 1
