package card

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTestCards keeps the table honest: every key is a valid PAN of a
// known scheme, and every entry says something.
func TestTestCards(t *testing.T) {
	for pan, tc := range TestCards() {
		ct := tc.Type
		if ct == CardTypeUnknown && tc.NetworkTokenRefusal == "" && tc.ProcessorDecline == "" {
			t.Errorf("%s...: an entry with nothing to say", pan[:6])
		}
		n, err := ParseNumber(pan)
		if err != nil {
			t.Errorf("%s...: %v", pan[:6], err)
			continue
		}
		if n.CardType() != ct {
			t.Errorf("%s...: CardType = %q, want %q", pan[:6], n.CardType(), ct)
		}
		if n.Scheme() == SchemeUnknown {
			t.Errorf("%s...: unknown scheme", pan[:6])
		}
	}
}

// TestNoCardNumberOutsideTheTable walks the workspace's non-test Go files
// and fails on a card number (13 to 19 digits passing Luhn, of a scheme's
// first digit) anywhere but testcards.go: the table stays the one place
// non-test code names a card, as its comment promises.
func TestNoCardNumberOutsideTheTable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Skipf("not in the workspace: %v", err)
	}
	number := regexp.MustCompile(`\b[2-6][0-9]{12,18}\b`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == ".data" || name == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Base(path) == "testcards.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range number.FindAll(src, -1) {
			if Luhn(m) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s names a card number ending %s: keep test cards in tokenizer/card/testcards.go", rel, m[len(m)-4:])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
