package testsupport

import (
	"os"
	"os/exec"
	"path/filepath"

	"github.com/payorch/shared/pgsetup"
)

// Dump returns a data-only pg_dump of the test database named db, taken as
// the admin user, so tests can search what a database really holds (card
// numbers, secrets) rather than what the code's queries return.
func (d *Databases) Dump(t TB, db string) string {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		if len(matches) == 0 {
			t.Fatalf("testsupport: pg_dump not found")
		}
		bin = matches[len(matches)-1]
	}
	dsn, err := pgsetup.DSN(d.AdminDSN, db, "")
	if err != nil {
		t.Fatalf("testsupport: %v", err)
	}
	cmd := exec.Command(bin, "--data-only", "--inserts", dsn)
	// bytea in escape form: printable bytes as themselves, others as \ooo.
	// In the default hex form a random value (a ciphertext, a wrapped key)
	// that starts with 13-19 decimal digits reads as a Luhn-valid card
	// number once in a few thousand values, and a CI run failed on one;
	// and hex would hide a card number stored as ASCII in a bytea, which
	// escape form shows to the scan as digits.
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c bytea_output=escape")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("testsupport: pg_dump %s: %v\n%s", db, err, out)
	}
	return string(out)
}
