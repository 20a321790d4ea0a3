package netguard_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Any service may apply these rules in its own dialer (core-api's webhook
// delivery among them): the package links the standard library only, so
// it brings neither fasthttp nor any PCI code with it.
func TestLinksOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/payorch/shared/netguard").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/payorch/shared/netguard" {
			t.Errorf("netguard links %s", p)
		}
	}
}
