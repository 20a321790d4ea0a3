#!/usr/bin/env bash
# make bench: the figures in BENCHMARKS.md, each measured against a baseline
# in the same run and reported as a throughput ratio (baseline ns/op divided
# by ours). Run through deploy/local/test.sh, which provides PostgreSQL and
# one dev Vault. Noisy machines: run twice and compare.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

bench() { # module package regexp
  (cd "$1" && go test -run XXX -bench "$3" -benchtime "${BENCHTIME:-3s}" -count 1 "$2") | tee -a "$out"
}

bench vault-proxy ./vaulting/ 'OpenCached|RawAES|VaultCard|BareInsert'
bench e2e . 'BenchmarkCore|BenchmarkForward'

ns() { awk -v n="Benchmark$1-" 'index($1, n) == 1 { for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") { print $i; exit } }' "$out"; }
ratio() { # label ours baseline goal
  local a b
  a=$(ns "$2"); b=$(ns "$3")
  if [ -z "$a" ] || [ -z "$b" ]; then return; fi
  awk -v l="$1" -v a="$a" -v b="$b" -v g="$4" 'BEGIN { r = b / a; printf "| %s | %.0f ns | %.0f ns | %.2fx | %s | %s |\n", l, a, b, r, g, (g == "-" ? "" : (r >= g ? "met" : "NOT met")) }'
}

echo
echo "| figure | ours | baseline | ratio (throughput) | goal | |"
echo "|---|---|---|---|---|---|"
ratio "open a cached record vs raw AES-256-GCM open (AEAD prebuilt)" OpenCached RawAESGCMOpenPrebuilt 0.5
ratio "open a cached record vs raw AES-256-GCM open (with key schedule)" OpenCached RawAESGCMOpen 0.5
ratio "vault a card (validate, HMAC, seal, insert + audit) vs bare pgx insert" VaultCard BareInsert 0.5
ratio "POST /buyers over HTTP vs the same insert through pgx" CoreCreateBuyer CoreBareInsertBuyer 0.5
ratio "GET /buyers page over HTTP (fasthttp load generator) vs the same select through pgx" CoreListBuyersLeanClient CoreBareSelectBuyers 0.5
ratio "GET /buyers page over HTTP (net/http load generator) vs the same select through pgx" CoreListBuyers CoreBareSelectBuyers 0.5
ratio "POST /vault-forward vs a plain pass-through proxy" ForwardVault ForwardPassThrough 0.8
ratio "POST /vault-forward vs a direct call to the target" ForwardVault ForwardDirect -
ratio "plain pass-through proxy vs a direct call to the target" ForwardPassThrough ForwardDirect -

# Latency at a constant 2,000 requests/s (e2e/loadgen: wrk2-style, measured
# from each request's scheduled start), pass-through vs /vault-forward in one
# run. Goal: under 1 ms added p99.
echo
(cd e2e && BENCH_LATENCY=1 go test -run 'TestForwardLatency' -count 1 -v .) | grep -o 'FORWARD_LATENCY.*' || true
