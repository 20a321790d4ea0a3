# The two commands: `make run` and `make test`. See README.md.
GO       ?= go
DATA     := .data
BIN      := $(DATA)/bin
DEVVAULT := $(BIN)/devvault
# Every module in go.work; there is no module at the root.
PKGS      = $(shell $(GO) list -f '{{.Dir}}/...' -m)

.PHONY: run test test-short lint bench soak devvault certs build clean check-fresh-postgres securefields dashboard-deps dashboard-build dashboard-check

run: $(DEVVAULT) build
	deploy/local/run.sh

# The browser tests (secure fields, dashboard) must run here, not skip.
test: $(DEVVAULT) securefields dashboard-check
	PAYORCH_BROWSER_TEST=required deploy/local/test.sh $(GO) test -race -count=1 -timeout 15m $(PKGS)

# Without -race: the quick loop while editing.
test-short: $(DEVVAULT) securefields dashboard-deps
	deploy/local/test.sh $(GO) test -count=1 -timeout 10m $(PKGS)

# The secure fields' package: npm ci when needed, tsc --noEmit, and the
# committed dist/ checked against its sources (docs/secure-fields.md).
securefields:
	deploy/local/securefields.sh

bench: $(DEVVAULT)
	deploy/local/test.sh deploy/local/bench.sh

# Every fuzz target for FUZZTIME each (default 1m); make test runs only
# their seed corpora.
soak: $(DEVVAULT)
	deploy/local/test.sh deploy/local/soak.sh

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/ ./vault-proxy/cmd/vault-proxy ./vault-proxy/cmd/mock-card ./vault-proxy/cmd/mock-3ds ./core-api/cmd/core-api ./core-api/cmd/mock-bank ./core-api/cmd/mock-direct ./core-api/cmd/mock-redirect ./core-api/cmd/mock-antifraud ./certs/cmd/devcerts

devvault: $(DEVVAULT)

# The merchant dashboard's web app (core-api/dashboard/web; docs/dashboard.md).
# Its build, dist/app.js, is committed and embedded in core-api, so building
# core-api needs no Node.js; dashboard-check type-checks src/ and fails when
# the committed build is not the build of src/. The browser test
# (e2e/dashboard_browser_test.go) needs these packages and Debian's chromium.
DASHBOARD_WEB := core-api/dashboard/web
dashboard-deps: $(DASHBOARD_WEB)/node_modules/.package-lock.json
$(DASHBOARD_WEB)/node_modules/.package-lock.json: $(DASHBOARD_WEB)/package-lock.json
	cd $(DASHBOARD_WEB) && npm ci --no-audit --no-fund
dashboard-build: dashboard-deps
	cd $(DASHBOARD_WEB) && npm run --silent build
dashboard-check: dashboard-deps
	cd $(DASHBOARD_WEB) && npm run --silent check

# The dev Vault is its own module (BSL-licensed Vault 1.17.0, never shipped),
# outside go.work so its ~270 requirements never reach the product's modules.
$(DEVVAULT): deploy/devvault/go.mod deploy/devvault/go.sum $(wildcard deploy/devvault/*.go)
	@mkdir -p $(BIN)
	cd deploy/devvault && GOWORK=off $(GO) build -trimpath -ldflags='-s -w' -o $(CURDIR)/$(DEVVAULT) .

certs:
	$(GO) run ./certs/cmd/devcerts -dir $(DATA)/certs

lint:
	deploy/local/lint.sh

# postgres.sh on a machine without PostgreSQL (a throwaway Debian root; needs
# root and Debian's mirror). Not part of test: this machine has PostgreSQL.
check-fresh-postgres:
	deploy/local/check-fresh-postgres.sh

clean:
	rm -rf $(BIN)
