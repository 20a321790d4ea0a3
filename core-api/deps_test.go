package coreapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The PCI boundary, enforced by the compiler's view of the world: nothing
// core-api builds may link the card vault, the tokenizer or the Vault client.
var forbidden = []string{
	"github.com/payorch/vault-proxy",
	"github.com/payorch/tokenizer",
	"github.com/hashicorp/vault/api",
}

func TestCoreAPIDoesNotLinkThePCIZone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "github.com/payorch/core-api/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list returned too little to judge: %q", out)
	}
	for _, p := range pkgs {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, f+"/") {
				t.Errorf("core-api links %s", p)
			}
		}
	}
}
