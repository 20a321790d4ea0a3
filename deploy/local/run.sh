#!/usr/bin/env bash
# `make run`: PostgreSQL, the dev Vault, certificates, both services and the
# sandbox card processor, on this machine. Ctrl-C stops the dev Vault and
# the services; a PostgreSQL cluster that deploy/local/postgres.sh started
# keeps running (README.md, "Dependencies a run needs", says how to stop it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
data="$root/.data"
bin="$data/bin"
mkdir -p "$data"
# Walkable, not listable: a private PostgreSQL cluster under .data/pg runs as
# the postgres user; keys and tokens inside carry their own 0600/0700 modes.
chmod 0711 "$data"

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo; echo "stopping..."
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$data/vault.env" "$data/vault-proxy.tokens" "$data/core-api.tokens"
}
trap cleanup INT TERM EXIT

wait_http() { # url [curl args]
  local url=$1; shift
  for _ in $(seq 1 100); do curl -fsS "$@" "$url" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "run.sh: $url did not answer" >&2; return 1
}

# 1. PostgreSQL, the two databases and their roles, then the migrations,
#    as each database's owner role. The services get only their runtime
#    roles' URLs: the owners' stay in this script (SECURITY.md).
DATABASE_URL=$(deploy/local/postgres.sh)
# Assigned first: a failure inside $(...) would go unnoticed.
db_env=$(go run ./shared/cmd/pgprovision -admin "$DATABASE_URL") || exit
unset DATABASE_URL # the admin's: nothing after this holds it
db_url() { sed -n "s/^$1=//p" <<<"$db_env"; }
export VAULT_PROXY_DATABASE_URL CORE_API_DATABASE_URL
VAULT_PROXY_DATABASE_URL=$(db_url VAULT_PROXY_DATABASE_URL)
CORE_API_DATABASE_URL=$(db_url CORE_API_DATABASE_URL)
VAULT_PROXY_MIGRATE_DATABASE_URL=$(db_url VAULT_PROXY_MIGRATE_DATABASE_URL) "$bin/vault-proxy" migrate
CORE_API_MIGRATE_DATABASE_URL=$(db_url CORE_API_MIGRATE_DATABASE_URL) "$bin/core-api" migrate

# 2. The dev Vault (unless VAULT_ADDR/VAULT_TOKEN name a real one), then the
#    transit keys, policies and the policy-bound tokens vault-proxy uses.
if [ -z "${VAULT_ADDR:-}" ] || [ -z "${VAULT_TOKEN:-}" ]; then
  # A file left by a run that was killed would carry another Vault's token.
  rm -f "$data/vault.env"
  "$bin/devvault" -listen 127.0.0.1:8200 -env-file "$data/vault.env" >/dev/null &
  pids+=($!)
  for _ in $(seq 1 100); do [ -s "$data/vault.env" ] && break; sleep 0.1; done
  set -a; . "$data/vault.env"; set +a
fi
"$bin/vault-proxy" vault-setup -policies deploy/vault -out "$data/vault-proxy.tokens"
service_token=$(sed -n 's/^VAULT_TOKEN=//p' "$data/vault-proxy.tokens")
# core-api's own key (payment service credentials) and its token, which
# reaches that key alone.
CORE_API_VAULT_ADDR="$VAULT_ADDR" CORE_API_VAULT_TOKEN="$VAULT_TOKEN" \
  "$bin/core-api" vault-setup -policies deploy/vault -out "$data/core-api.tokens"
core_vault_token=$(sed -n 's/^CORE_API_VAULT_TOKEN=//p' "$data/core-api.tokens")

# 3. Development certificates (kept when still valid).
"$bin/devcerts" -dir "$data/certs" >/dev/null
c="$data/certs"

export ENVIRONMENT=${ENVIRONMENT:-sandbox}

# 4. An instance API key pair (public keys only are loaded by the services)
#    and a token for the developer.
#    The developer's token may act in every merchant account, so that
#    accounts created while trying the API can be used with it.
token=$("$bin/core-api" token -key-dir "$data/auth" -scopes '*.read,*.write' -all-merchant-accounts -lifetime 24h)
export AUTH_PUBLIC_KEYS_FILE="$data/auth/public-keys.pem"
# List cursors are signed; a key kept in .data lets them survive restarts.
[ -s "$data/cursor.key" ] || (umask 077; head -c 32 /dev/urandom > "$data/cursor.key")
export CORE_API_CURSOR_KEY_FILE="$data/cursor.key"
# Completion URLs of direct integrations are signed the same way.
[ -s "$data/completion.key" ] || (umask 077; head -c 32 /dev/urandom > "$data/completion.key")
export CORE_API_COMPLETION_KEY_FILE="$data/completion.key"
[ -s "$data/vault-proxy-cursor.key" ] || (umask 077; head -c 32 /dev/urandom > "$data/vault-proxy-cursor.key")

# 5. mock-card, the sandbox card processor (docs/sandbox/mock-card.md),
#    named in vault-proxy's detokenize destinations. Never in production,
#    where vault-proxy refuses a destination on loopback anyway.
mock_card=http://127.0.0.1:9700
if [ "$ENVIRONMENT" != production ]; then
  MOCK_CARD_ADDR=${mock_card#http://} "$bin/mock-card" &
  pids+=($!)
  wait_http "$mock_card/healthz"
  export VAULT_PROXY_DESTINATIONS="${VAULT_PROXY_DESTINATIONS:+$VAULT_PROXY_DESTINATIONS,}mock-card=$mock_card"
fi

# 5a. mock-3ds, the sandbox 3-D Secure server (docs/sandbox/mock-3ds.md):
#     it receives card numbers, so core-api's connector reaches it only
#     through vault-proxy's detokenized call, destination mock-3ds.
mock_3ds=http://127.0.0.1:9750
if [ "$ENVIRONMENT" != production ]; then
  MOCK_3DS_ADDR=${mock_3ds#http://} "$bin/mock-3ds" &
  pids+=($!)
  wait_http "$mock_3ds/healthz"
  export VAULT_PROXY_DESTINATIONS="$VAULT_PROXY_DESTINATIONS,mock-3ds=$mock_3ds"
fi

# 5b. mock-bank, the sandbox bank (docs/sandbox/mock-bank.md): core-api
#     creates pix QR charges there, and it sends its signed notifications
#     to core-api's POST /webhooks/mock-bank/{merchant_account_id}.
mock_bank=http://127.0.0.1:9710
if [ "$ENVIRONMENT" != production ]; then
  MOCK_BANK_ADDR=${mock_bank#http://} "$bin/mock-bank" &
  pids+=($!)
  wait_http "$mock_bank/healthz"
  export CORE_API_MOCK_BANK_URL=$mock_bank CORE_API_NOTIFICATION_URL=http://127.0.0.1:8080
fi

# 5c. mock-direct, the sandbox wallet of direct (SDK) integrations
#     (docs/sandbox/mock-direct.md): it sees no card data; core-api's
#     mock-direct connector calls it directly. Completion URLs point at
#     vault-proxy's public listener, which passes them on to core-api.
mock_direct=http://127.0.0.1:9720
if [ "$ENVIRONMENT" != production ]; then
  MOCK_DIRECT_ADDR=${mock_direct#http://} "$bin/mock-direct" &
  pids+=($!)
  wait_http "$mock_direct/healthz"
  export CORE_API_MOCK_DIRECT_URL=$mock_direct
fi

# 5d. mock-redirect, the sandbox processor of redirect (push) payments
#     such as gcash (docs/sandbox/mock-redirect.md): the buyer approves on
#     its page, and it sends its signed notifications to core-api's
#     POST /webhooks/mock-redirect/{merchant_account_id}.
mock_redirect=http://127.0.0.1:9730
if [ "$ENVIRONMENT" != production ]; then
  MOCK_REDIRECT_ADDR=${mock_redirect#http://} "$bin/mock-redirect" &
  pids+=($!)
  wait_http "$mock_redirect/healthz"
  export CORE_API_MOCK_REDIRECT_URL=$mock_redirect
fi

# 5e. mock-antifraud, the sandbox anti-fraud provider
#     (docs/sandbox/mock-antifraud.md): it sees no card data (a BIN and a
#     scheme); core-api's mock-antifraud connector calls it directly.
mock_antifraud=http://127.0.0.1:9740
if [ "$ENVIRONMENT" != production ]; then
  MOCK_ANTIFRAUD_ADDR=${mock_antifraud#http://} "$bin/mock-antifraud" &
  pids+=($!)
  wait_http "$mock_antifraud/healthz"
  export CORE_API_MOCK_ANTIFRAUD_URL=$mock_antifraud
fi
export CORE_API_PUBLIC_URL=https://127.0.0.1:8443

# 5f. The merchant dashboard (docs/dashboard.md): served by core-api, its
#     tokens signed by a key of their own (created on first use), which
#     vault-proxy accepts from the dashboard's origin; and a first admin,
#     whose generated password is kept in .data (0600) to be printed on
#     every start.
dashboard_url=http://127.0.0.1:8080
"$bin/core-api" dashboard-key -key-dir "$data/dashboard-auth"
export CORE_API_DASHBOARD_KEY_DIR="$data/dashboard-auth" CORE_API_DASHBOARD_ORIGIN=$dashboard_url
export VAULT_PROXY_DASHBOARD_KEYS_FILE="$data/dashboard-auth/public-keys.pem" VAULT_PROXY_DASHBOARD_ORIGIN=$dashboard_url
if [ ! -s "$data/dashboard-admin.txt" ]; then
  if ! (umask 077; "$bin/core-api" user add -email admin@payorch.test -role admin -merchant-accounts '*' > "$data/dashboard-admin.tmp"); then
    echo "dashboard: no first admin added (see above); add one with: $bin/core-api user add -email EMAIL" >&2
  else
    mv "$data/dashboard-admin.tmp" "$data/dashboard-admin.txt"
  fi
  rm -f "$data/dashboard-admin.tmp"
fi
dashboard_password=$(sed -n 's/^password: //p' "$data/dashboard-admin.txt" 2>/dev/null || true)

# 6. vault-proxy: the PCI zone, with the runtime policy's token only.
VAULT_TOKEN="$service_token" \
VAULT_PROXY_PUBLIC_CERT_FILE="$c/public.pem" VAULT_PROXY_PUBLIC_KEY_FILE="$c/public-key.pem" \
VAULT_PROXY_INTERNAL_CERT_FILE="$c/vault-proxy.pem" VAULT_PROXY_INTERNAL_KEY_FILE="$c/vault-proxy-key.pem" \
VAULT_PROXY_CLIENT_CA_FILE="$c/ca.pem" VAULT_PROXY_AUDIT_SPOOL_DIR="$data/audit-spool" \
VAULT_PROXY_CURSOR_KEY_FILE="$data/vault-proxy-cursor.key" \
  "$bin/vault-proxy" serve &
pids+=($!)

# 7. core-api: no vault database, nor vault-proxy's Vault token; its own
#    token for its credentials key; mTLS to vault-proxy.
( core_vault_addr=$VAULT_ADDR
  unset VAULT_TOKEN VAULT_ADDR VAULT_PROXY_DATABASE_URL
  CORE_API_VAULT_ADDR="$core_vault_addr" CORE_API_VAULT_TOKEN="$core_vault_token" \
  VAULT_PROXY_CA_FILE="$c/ca.pem" CORE_API_CLIENT_CERT_FILE="$c/core-api.pem" CORE_API_CLIENT_KEY_FILE="$c/core-api-key.pem" \
    exec "$bin/core-api" serve ) &
pids+=($!)

wait_http https://127.0.0.1:8443/readyz --cacert "$c/ca.pem"
wait_http http://127.0.0.1:8080/readyz

cat <<MSG

payorch is running ($ENVIRONMENT)
  core-api             http://127.0.0.1:8080
  vault-proxy public   https://127.0.0.1:8443   (TLS; curl --cacert $c/ca.pem)
  vault-proxy internal https://127.0.0.1:9443   (mutual TLS; core-api's certificate only)
  vault-proxy admin    http://127.0.0.1:9090    (loopback: /healthz, /readyz)
  Vault                $VAULT_ADDR
  health               curl -s http://127.0.0.1:8080/readyz
  dashboard            $dashboard_url/   (admin@payorch.test / $dashboard_password: changed at the first sign-in)
MSG
if [ "$ENVIRONMENT" != production ]; then
  echo "  mock-card            $mock_card   (sandbox card processor; vault-proxy destination mock-card)"
  echo "  mock-3ds             $mock_3ds   (sandbox 3-D Secure server; vault-proxy destination mock-3ds)"
  echo "  mock-bank            $mock_bank   (sandbox bank: pix QR charges; POST /sandbox/qr/{id}/pay plays the buyer)"
  echo "  mock-direct          $mock_direct   (sandbox wallet of direct integrations; buyer page /checkoutnow?token=ORDER)"
  echo "  mock-redirect        $mock_redirect   (sandbox processor of redirect payments (gcash); buyer page /pay/{id})"
fi
cat <<MSG
  token (24h, all scopes, every merchant account; mint others with:
    $bin/core-api token -key-dir $data/auth -scopes buyers.write -merchant-account default)
    export TOKEN=$token
  try it
    curl -s --cacert $c/ca.pem https://127.0.0.1:8443/payment-methods -H "Authorization: Bearer \$TOKEN" \\
      -H 'Content-Type: application/json' -d '{"method":"card","number":"4111111111111111","expiration_date":"12/30"}'
  then pay with it (the id from that answer; docs/transactions.md)
    curl -s --cacert $c/ca.pem https://127.0.0.1:8443/transactions -H "Authorization: Bearer \$TOKEN" \\
      -H 'Content-Type: application/json' -H "Idempotency-Key: \$(uuidgen 2>/dev/null || date +%s%N)" \\
      -d '{"amount":1299,"currency":"USD","country":"US","payment_method":{"method":"id","id":"<id>"}}'
MSG
echo; echo "Ctrl-C stops the services and the dev Vault (PostgreSQL keeps running; see README.md)."
wait -n "${pids[@]}"
