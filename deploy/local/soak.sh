#!/usr/bin/env bash
# make soak: every fuzz target in the repository, FUZZTIME each (default
# 1m; about 20 minutes in all), one after another. make test runs the same
# targets on their seed corpora only. Run through deploy/local/test.sh, which
# provides PostgreSQL and one dev Vault to packages whose TestMain wants them.
# A failure leaves its input under the package's testdata/fuzz/: commit it,
# and it becomes a regression test that make test runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-1m}
targets=$(git grep -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' || true)
[ -n "$targets" ] || { echo "soak: no fuzz targets found" >&2; exit 1; }
failed=()
while IFS=: read -r file decl; do
  name=${decl#func }
  dir=$(dirname "$file")
  echo "soak: $dir $name ($fuzztime)"
  if ! (cd "$dir" && go test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" .); then
    failed+=("$dir $name")
  fi
done <<<"$targets"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'soak: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "soak: every fuzz target ran $fuzztime without a failure"
