package netguard

import "testing"

func TestCheckName(t *testing.T) {
	for _, tt := range []struct {
		host     string
		loopback bool
		want     Verdict
	}{
		{"api.processor.example", false, Allowed},
		{"localhost", false, NameLocalhost},
		{"localhost", true, Allowed},
		{"app.localhost", false, NameLocalhost},
		{"app.localhost", true, Allowed},
		{"metadata.google.internal", true, NameMetadata},
		{"metadata.goog", true, NameMetadata},
		{"instance-data.ec2.internal", false, NameMetadata},
		{"metadata", true, NameSingleLabel},
		{"instance-data", false, NameSingleLabel},
		{"vault.internal", false, NameReserved},
		{"printer.local", false, NameReserved},
		{"postgres.default.svc.cluster.local", false, NameReserved},
		{"kubernetes.default.svc", false, NameReserved},
		{"router.home.arpa", false, NameReserved},
		{"internal.example", false, Allowed},
	} {
		if got := CheckName(tt.host, tt.loopback); got != tt.want {
			t.Errorf("CheckName(%q, %v) = %v, want %v", tt.host, tt.loopback, got, tt.want)
		}
	}
}

func TestCheckNameAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		for _, h := range []string{"api.processor.example", "metadata.goog", "postgres.default.svc.cluster.local"} {
			_ = CheckName(h, false)
		}
	}); n != 0 {
		t.Errorf("CheckName allocates %v times", n)
	}
}

// Every verdict has its own word, and only refusals of addresses say they
// are.
func TestVerdictStrings(t *testing.T) {
	seen := map[string]Verdict{}
	for v := Allowed; v < numVerdicts; v++ {
		s := v.String()
		if s == "" || s == "unknown" {
			t.Errorf("verdict %d has no name", v)
		}
		if w, dup := seen[s]; dup {
			t.Errorf("verdicts %d and %d are both %q", w, v, s)
		}
		seen[s] = v
		if want := len(s) > 8 && s[:8] == "address_"; v.IsAddress() != want {
			t.Errorf("%s: IsAddress %v", s, v.IsAddress())
		}
	}
	if numVerdicts.String() != "unknown" {
		t.Errorf("an out-of-range verdict is %q", numVerdicts.String())
	}
}
