#!/usr/bin/env bash
# gofmt, go vet, staticcheck (installed from the module proxy when missing),
# govulncheck when its database is reachable (it is not on these machines).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
status=0
pkgs=$(go list -f '{{.Dir}}/...' -m)

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; status=1; fi

go vet $pkgs || status=1

sc="$(go env GOPATH)/bin/staticcheck"
if [ ! -x "$sc" ]; then go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 >/dev/null 2>&1 || true; fi
if [ -x "$sc" ]; then "$sc" $pkgs || status=1; else echo "lint: staticcheck not installable here; skipped"; fi

vc="$(go env GOPATH)/bin/govulncheck"
if [ ! -x "$vc" ]; then go install golang.org/x/vuln/cmd/govulncheck@latest >/dev/null 2>&1 || true; fi
if [ -x "$vc" ] && curl -s -m 5 -o /dev/null https://vuln.go.dev/index/db.json.gz 2>/dev/null; then
  "$vc" $pkgs || status=1
else
  echo "lint: govulncheck skipped: its vulnerability database is not reachable from this machine"
fi
exit $status
