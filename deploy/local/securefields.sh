#!/usr/bin/env bash
# The secure card fields' browser package (vault-proxy/securefields), run
# by make test before the Go tests: installs its npm packages when they are
# missing or older than package-lock.json (npm ci), type-checks the
# TypeScript (tsc --noEmit), and checks that the committed dist/, which
# vault-proxy embeds, is what the sources build. dist/ is committed so that
# a clean clone builds, vets and tests with Go alone; after changing the
# sources, `npm run build` there and commit dist/.
set -euo pipefail
cd "$(dirname "$0")/../../vault-proxy/securefields"
if ! command -v npm >/dev/null 2>&1; then
  echo "securefields.sh: npm is required (Node.js >= 20)" >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npx --no-install tsc --noEmit -p .
node build.mjs --check
