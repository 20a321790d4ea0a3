#!/usr/bin/env bash
# Runs a command with the real dependencies every test talks to:
# DATABASE_URL (an admin URL; each test package makes its own databases) and
# one dev Vault shared by the run (VAULT_ADDR/VAULT_TOKEN; each test package
# mounts its own transit engine on it). Usage: test.sh COMMAND [ARGS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

DATABASE_URL=$(deploy/local/postgres.sh)
export DATABASE_URL

if [ -z "${VAULT_ADDR:-}" ] || [ -z "${VAULT_TOKEN:-}" ]; then
  tmp=$(mktemp -d)
  "$root/.data/bin/devvault" -listen 127.0.0.1:0 -env-file "$tmp/vault.env" >/dev/null &
  vault_pid=$!
  trap 'kill "$vault_pid" 2>/dev/null; wait "$vault_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
  for _ in $(seq 1 300); do [ -s "$tmp/vault.env" ] && break; sleep 0.1; done
  [ -s "$tmp/vault.env" ] || { echo "test.sh: dev Vault did not start" >&2; exit 1; }
  set -a; . "$tmp/vault.env"; set +a
fi

"$@"
