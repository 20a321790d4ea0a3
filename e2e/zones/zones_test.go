// Package zones_test proves the production hosts' firewall rules
// (deploy/production/nftables): applied with the real nft in network
// namespaces this test makes, one per host of a small deployment, they
// allow exactly the flows of the zone matrix in deploy/production/README.md.
//
// It needs root, ip(8) and nft(8). Without them it skips, unless
// PAYORCH_ZONES_TEST=required (set by .ci/run), where it fails.
package zones_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// host is one machine of the test deployment; ruleset is its zone's file
// under deploy/production/nftables ("" for the internet, which is not ours),
// and set the address set of payorch-hosts.nft it belongs to ("" for none).
type host struct {
	name, addr, ruleset, set string
	listen                   []int
}

// The internet stand-in is outside internal_nets, like a processor's or a
// merchant's address; every other host is inside 10.0.0.0/8.
var hosts = []host{
	{"internet", "203.0.113.10", "", "", []int{80, 443}},
	{"pci", "10.77.0.20", "pci.nft", "pci_hosts", []int{8443, 9443}},
	{"core", "10.77.0.30", "core.nft", "core_hosts", []int{8080}},
	{"vaultdata", "10.77.0.40", "vault-data.nft", "vault_data_hosts", []int{22, 443, 5432, 8200}},
	{"coredata", "10.77.0.50", "core-data.nft", "core_data_hosts", []int{443, 5432}},
	{"dns", "10.77.0.53", "", "dns_servers", []int{53}},
	{"edge", "10.77.0.60", "", "core_edge_hosts", []int{443}}, // the operator's TLS terminator in front of core-api
}

// hostsFile is this deployment's payorch-hosts.nft, made from hosts so that
// the two cannot disagree.
func hostsFile() []byte {
	var b strings.Builder
	for _, h := range hosts {
		if h.set != "" {
			fmt.Fprintf(&b, "define %s = { %s }\n", h.set, h.addr)
		}
	}
	b.WriteString("define internal_nets = { 10.0.0.0/8 }\n")
	return []byte(b.String())
}

// flows is the zone matrix: who may open a connection to whom. Each side
// is checked on its own: egress is what the sender's ruleset allows out,
// ingress what the receiver's allows in. A host without a ruleset of ours
// (the internet, DNS, the core edge) lets everything through, and its side
// is true here.
var flows = []struct {
	from, to        string
	port            int
	egress, ingress bool
}{
	{"internet", "pci", 8443, true, true},
	{"internet", "pci", 9443, true, false},  // the internal API is core-api's alone
	{"internet", "core", 8080, true, false}, // core-api speaks plain HTTP: only behind its TLS terminator
	{"internet", "edge", 443, true, true},
	{"edge", "core", 8080, true, true},
	{"internet", "vaultdata", 5432, true, false},
	{"internet", "vaultdata", 8200, true, false},
	{"internet", "coredata", 5432, true, false},

	{"core", "pci", 9443, true, true},
	{"core", "pci", 8443, false, true},
	{"core", "vaultdata", 5432, false, false}, // the vault database: never from the non-PCI zone
	{"core", "vaultdata", 8200, false, false}, // nor Vault
	{"core", "vaultdata", 443, false, false},  // "any HTTPS host" is never an internal one
	{"core", "coredata", 5432, true, true},
	{"core", "internet", 443, true, true},
	{"core", "internet", 80, false, true},
	{"core", "dns", 53, true, true},

	{"pci", "vaultdata", 5432, true, true},
	{"pci", "vaultdata", 8200, true, true},
	{"pci", "vaultdata", 22, false, false},
	{"pci", "coredata", 5432, false, false},
	{"pci", "coredata", 443, false, false},
	{"pci", "edge", 443, true, true}, // non-card routes passed on to core-api, over HTTPS
	{"pci", "core", 8080, false, false},
	{"pci", "internet", 443, true, true},
	{"pci", "internet", 80, false, true},
	{"pci", "dns", 53, true, true},

	{"vaultdata", "internet", 443, false, true},
	{"vaultdata", "core", 8080, false, false},
	{"coredata", "vaultdata", 5432, false, false},
	{"coredata", "internet", 443, false, true},
}

// TestZoneFirewallAllowsExactlyTheMatrix loads no ruleset, then each
// host's alone, then all of them, and checks every flow each time. With one
// host's rules loaded, a mistake in them cannot hide behind another host's
// (a core-api host that let HTTPS out to the vault database would still be
// refused by the database host, and only this shows it).
func TestZoneFirewallAllowsExactlyTheMatrix(t *testing.T) {
	requireTools(t)
	n := newNet(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "payorch-hosts.nft"), hostsFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs("../../deploy/production/nftables")
	if err != nil {
		t.Fatal(err)
	}
	load := func(h host) {
		// Twice: an operator re-applies a ruleset after a change, and the
		// second load must replace the first, not add to it.
		var listed [2]string
		for i := range listed {
			n.run("ip", "netns", "exec", n.ns(h.name), "nft", "-I", dir, "-f", filepath.Join(rules, h.ruleset))
			listed[i] = n.run("ip", "netns", "exec", n.ns(h.name), "nft", "list", "ruleset")
		}
		if listed[0] != listed[1] {
			t.Fatalf("%s loaded twice differs from once:\n%s\n---\n%s", h.ruleset, listed[0], listed[1])
		}
	}
	unload := func(h host) { n.run("ip", "netns", "exec", n.ns(h.name), "nft", "flush", "ruleset") }

	var ours []host
	for _, h := range hosts {
		if h.ruleset != "" {
			ours = append(ours, h)
		}
	}
	// No rules first: every flow connects, so a refusal later is the
	// rules' doing, not a missing listener or route.
	n.check(t, "no rules", map[string]bool{})
	for _, h := range ours {
		load(h)
		n.check(t, h.ruleset+" alone", map[string]bool{h.name: true})
		unload(h)
	}
	all := map[string]bool{}
	for _, h := range ours {
		load(h)
		all[h.name] = true
	}
	n.check(t, "every host's rules", all)
}

// check dials every flow in parallel with the rulesets of loaded in force.
func (n *testNet) check(t *testing.T, phase string, loaded map[string]bool) {
	t.Run(phase, func(t *testing.T) {
		for _, f := range flows {
			want := (!loaded[f.from] || f.egress) && (!loaded[f.to] || f.ingress)
			t.Run(fmt.Sprintf("%s->%s:%d", f.from, f.to, f.port), func(t *testing.T) {
				t.Parallel()
				err := n.dial(f.from, f.to, f.port)
				switch {
				case want && err != nil:
					t.Errorf("refused, want allowed: %v", err)
				case !want && err == nil:
					t.Errorf("connected, want refused")
				}
			})
		}
	})
}

func requireTools(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the zone firewall test needs " + strings.Join(missing, ", ")
	if os.Getenv("PAYORCH_ZONES_TEST") == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// testNet is the deployment: one namespace per host, each with an eth0
// plugged into a bridge in a namespace of its own.
type testNet struct {
	t      *testing.T
	prefix string
	addr   map[string]string
}

func newNet(t *testing.T) *testNet {
	n := &testNet{t: t, prefix: "pz" + strconv.Itoa(os.Getpid()) + "-", addr: map[string]string{}}
	lan := n.ns("lan")
	t.Cleanup(func() {
		for _, h := range hosts {
			exec.Command("ip", "netns", "del", n.ns(h.name)).Run() //nolint:errcheck // best effort: may not exist
		}
		exec.Command("ip", "netns", "del", lan).Run() //nolint:errcheck // as above
	})
	n.run("ip", "netns", "add", lan)
	n.run("ip", "-n", lan, "link", "add", "br0", "type", "bridge")
	n.run("ip", "-n", lan, "link", "set", "br0", "up")
	for i, h := range hosts {
		ns, peer := n.ns(h.name), "p"+strconv.Itoa(i)
		n.addr[h.name] = h.addr
		n.run("ip", "netns", "add", ns)
		n.run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", lan)
		n.run("ip", "-n", lan, "link", "set", peer, "master", "br0", "up")
		n.run("ip", "-n", ns, "addr", "add", h.addr+"/32", "dev", "eth0")
		n.run("ip", "-n", ns, "link", "set", "lo", "up")
		n.run("ip", "-n", ns, "link", "set", "eth0", "up")
		// One flat segment holding both address ranges: every other host
		// is on-link.
		n.run("ip", "-n", ns, "route", "add", "10.77.0.0/24", "dev", "eth0")
		n.run("ip", "-n", ns, "route", "add", "203.0.113.0/24", "dev", "eth0")
		for _, port := range h.listen {
			n.listen(h.name, net.JoinHostPort(h.addr, strconv.Itoa(port)))
		}
	}
	return n
}

func (n *testNet) ns(name string) string { return n.prefix + name }

// run runs a command that must succeed and returns its output.
func (n *testNet) run(args ...string) string {
	n.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// listen accepts and closes connections on addr inside host's namespace.
func (n *testNet) listen(host, addr string) {
	n.t.Helper()
	var l net.Listener
	err := inNetns(n.ns(host), func() (err error) {
		l, err = net.Listen("tcp4", addr)
		return err
	})
	if err != nil {
		n.t.Fatalf("listen %s in %s: %v", addr, host, err)
	}
	n.t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// dial opens a TCP connection from one host to another; a dropped SYN shows
// as the timeout.
func (n *testNet) dial(from, to string, port int) error {
	return inNetns(n.ns(from), func() error {
		c, err := net.DialTimeout("tcp4", net.JoinHostPort(n.addr[to], strconv.Itoa(port)), 700*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// inNetns runs f on an OS thread moved into the named network namespace.
// The thread is never unlocked, so it ends with its goroutine instead of
// going back to the pool in the wrong namespace. Sockets keep the
// namespace they were made in, wherever they are used afterwards.
func inNetns(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}
