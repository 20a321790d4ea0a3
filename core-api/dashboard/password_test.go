package dashboard_test

import (
	"strings"
	"testing"

	"github.com/payorch/core-api/dashboard"
)

func TestHashPassword(t *testing.T) {
	const pw = "correct horse battery staple"
	h1, err := dashboard.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := dashboard.HashPassword(pw)
	if h1 == h2 {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	if !strings.HasPrefix(h1, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h1, pw) {
		t.Errorf("hash = %q", h1)
	}
	for _, c := range []struct {
		password string
		want     bool
	}{{pw, true}, {pw + " ", false}, {"", false}, {strings.ToUpper(pw), false}} {
		ok, err := dashboard.CheckPassword(h1, c.password)
		if err != nil || ok != c.want {
			t.Errorf("CheckPassword(%q) = %v, %v; want %v", c.password, ok, err, c.want)
		}
	}
}

func TestCheckPasswordMalformed(t *testing.T) {
	good, _ := dashboard.HashPassword("a long enough password")
	parts := strings.Split(good, "$")
	for name, h := range map[string]string{
		"empty":        "",
		"argon2i":      strings.Replace(good, "argon2id", "argon2i", 1),
		"bcrypt":       "$2a$10$abcdefghijklmnopqrstuuabcdefghijklmnopqrstuvwxyz01234",
		"version":      strings.Replace(good, "v=19", "v=16", 1),
		"params":       strings.Replace(good, "m=19456,t=2,p=1", "m=x", 1),
		"zero passes":  strings.Replace(good, "t=2", "t=0", 1),
		"huge memory":  strings.Replace(good, "m=19456", "m=99999999", 1),
		"bad salt":     strings.Join(append(parts[:4:4], "!!", parts[5]), "$"),
		"empty digest": strings.Join(append(parts[:5:5], ""), "$"),
	} {
		if ok, err := dashboard.CheckPassword(h, "a long enough password"); ok || err == nil {
			t.Errorf("%s: CheckPassword = %v, %v; want an error", name, ok, err)
		}
	}
}
