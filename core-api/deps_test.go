package coreapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The PCI boundary, enforced by the compiler's view of the world: nothing
// core-api builds may link the card vault or the tokenizer (the card
// keys' client), nor vault-proxy's HTTP stack (fasthttp): what the zones
// share (the outbound address rules of shared/netguard among them) lives
// in shared, free of both. The Vault client itself is core-api's too
// (vaulttransit, for payment service credentials), with a token whose
// policy reaches its own transit key alone (deploy/vault/core-api.hcl):
// Vault, not the linker, keeps it from the card keys.
var forbidden = []string{
	"github.com/payorch/vault-proxy",
	"github.com/payorch/tokenizer",
	"github.com/valyala/fasthttp",
}

func TestCoreAPIDoesNotLinkThePCIZone(t *testing.T) {
	pkgs := goList(t, "-deps", "-test", module+"/...")
	if len(pkgs) < 10 {
		t.Fatalf("go list returned too little to judge: %q", pkgs)
	}
	for _, p := range pkgs {
		for _, f := range forbidden {
			if under(p, f) {
				t.Errorf("core-api links %s", p)
			}
		}
	}
}

const module = "github.com/payorch/core-api"

// The adapters around the services: transport, storage, the client of
// vault-proxy, the wiring. A service reaches none of them, directly or
// through another package: it depends on interfaces it declares, which
// these implement.
var adapters = []string{
	module + "/app",
	module + "/cmd",
	module + "/httpapi",
	module + "/postgres",
	module + "/vaultclient",
	module + "/vaulttransit",
	module + "/webhookhttp",
}

// simulators are the sandbox's third parties (mock-bank, mock-direct): HTTP servers of
// their own, shipped in the tree but never linked into core-api.
const simulators = module + "/sandbox"

// isService reports whether package p of core-api is a service: anything
// but the domain at the root, the adapters, the connectors (which speak
// HTTP to processors) and the simulators with their commands.
func isService(p string) bool {
	return p != module && !underAny(p, adapters) && !under(p, module+"/connector") && !under(p, simulators) &&
		!under(p, module+"/cmd/mock-bank") &&
		!under(p, module+"/cmd/mock-direct")
}

// The core-api binary reaches a simulator only over the wire, as it would
// a real processor: it never links one, and no simulator links core-api's
// services or adapters (its own wire types, as a third party's).
func TestCoreAPIDoesNotLinkTheSimulators(t *testing.T) {
	pkgs := listPackages(t)
	for _, d := range pkgs[module+"/cmd/core-api"].deps {
		if under(d, simulators) {
			t.Errorf("the core-api binary links %s", d)
		}
	}
	found := false
	for path, p := range pkgs {
		if !under(path, simulators) {
			continue
		}
		found = true
		for _, d := range p.deps {
			if d == module || under(d, module+"/transactions") || under(d, module+"/connector") || underAny(d, adapters) {
				t.Errorf("simulator %s links %s", path, d)
			}
		}
	}
	if !found {
		t.Fatal("no simulator package to judge")
	}
}

// The domain at the module root holds types and rules, free of transport
// and storage: it does not link net/http or pgx (nor anything else of
// github.com/jackc).
func TestDomainKnowsNeitherHTTPNorSQL(t *testing.T) {
	for _, p := range goList(t, "-deps", module) {
		if under(p, "net/http") || under(p, "github.com/jackc") {
			t.Errorf("the domain package links %s", p)
		}
	}
}

// The services hold the business steps: they speak neither HTTP nor SQL
// themselves (no net/http, no pgx, no error envelope: httpapi maps the
// domain's errors to it), and reach no adapter. net/http may be linked
// through shared packages (pagination's cursors answer in the envelope);
// pgx may not be linked at all.
func TestServicesSpeakNeitherHTTPNorSQL(t *testing.T) {
	pkgs := listPackages(t)
	services := 0
	for path, p := range pkgs {
		if !isService(path) {
			continue
		}
		services++
		for _, i := range p.imports {
			if under(i, "net/http") || under(i, "github.com/payorch/shared/apierror") {
				t.Errorf("service %s imports %s", path, i)
			}
		}
		for _, d := range p.deps {
			if under(d, "github.com/jackc") || underAny(d, adapters) {
				t.Errorf("service %s links %s", path, d)
			}
		}
	}
	if services == 0 {
		t.Fatalf("no service package to judge among %d packages", len(pkgs))
	}
}

// The transport reaches the database only through the services.
func TestHTTPAPIDoesNotUseTheStore(t *testing.T) {
	for _, d := range listPackages(t)[module+"/httpapi"].deps {
		if under(d, module+"/postgres") {
			t.Errorf("httpapi links %s", d)
		}
	}
}

// goList runs go list with args and returns its output's fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// pkg is what a package of core-api imports itself and links in all
// (without its tests).
type pkg struct{ imports, deps []string }

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	pkgs := map[string]pkg{}
	for _, line := range goList(t, "-f", `{{.ImportPath}}|{{join .Imports ","}}|{{join .Deps ","}}`, module+"/...") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		pkgs[f[0]] = pkg{imports: strings.Split(f[1], ","), deps: strings.Split(f[2], ",")}
	}
	return pkgs
}

// under reports whether package p is prefix or below it.
func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

func underAny(p string, prefixes []string) bool {
	for _, prefix := range prefixes {
		if under(p, prefix) {
			return true
		}
	}
	return false
}

// The sandbox simulators on this side of the tree (mock-direct) are third
// parties in spirit, run as their own servers: the core-api binary, and
// everything it links, never links them; connectors reach them over HTTP.
func TestCoreAPIBinaryDoesNotLinkTheSimulators(t *testing.T) {
	for _, p := range goList(t, "-deps", module+"/cmd/core-api") {
		if under(p, module+"/sandbox") {
			t.Errorf("the core-api binary links %s", p)
		}
	}
}
