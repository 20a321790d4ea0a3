package auth_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

func TestCache(t *testing.T) {
	tok := mustMint(t, []string{"buyers.write"}, time.Hour, nil)

	t.Run("a hit still checks exp", func(t *testing.T) {
		v := newVerifier(t, auth.Config{})
		if _, err := verify(v, tok, t0); err != nil {
			t.Fatal(err)
		}
		if n := auth.CacheLen(v); n != 1 {
			t.Fatalf("cache holds %d", n)
		}
		_, err := verify(v, tok, t0.Add(2*time.Hour))
		wantAPIError(t, err, 401, "token expired")
		if n := auth.CacheLen(v); n != 0 {
			t.Errorf("expired entry kept: %d", n)
		}
	})
	t.Run("a hit still checks nbf", func(t *testing.T) {
		v := newVerifier(t, auth.Config{})
		if _, err := verify(v, tok, t0); err != nil {
			t.Fatal(err)
		}
		_, err := verify(v, tok, t0.Add(-time.Hour))
		wantAPIError(t, err, 401, "token not yet valid")
		if _, err := verify(v, tok, t0.Add(time.Minute)); err != nil {
			t.Errorf("still valid later: %v", err)
		}
	})
	t.Run("rejected tokens are not cached", func(t *testing.T) {
		v := newVerifier(t, auth.Config{})
		bad := build(t, baseHeader(), baseClaims(), es512(t, keyB))
		for range 2 {
			_, err := verify(v, bad, t0)
			wantAPIError(t, err, 401, "invalid token")
		}
		_, err := verify(v, tok, t0.Add(-time.Hour)) // correctly signed, not yet valid
		wantAPIError(t, err, 401, "token not yet valid")
		if n := auth.CacheLen(v); n != 0 {
			t.Errorf("cache holds %d", n)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		v := newVerifier(t, auth.Config{CacheSize: 2})
		for i := range 5 {
			if _, err := verify(v, mustMint(t, []string{fmt.Sprintf("r%d.read", i)}, time.Hour, nil), t0); err != nil {
				t.Fatal(err)
			}
		}
		if n := auth.CacheLen(v); n != 2 {
			t.Errorf("cache holds %d, want 2", n)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		v := newVerifier(t, auth.Config{CacheSize: -1})
		for range 2 {
			if _, err := verify(v, tok, t0); err != nil {
				t.Fatal(err)
			}
		}
		if n := auth.CacheLen(v); n != 0 {
			t.Errorf("cache holds %d", n)
		}
	})
	t.Run("callers get copies", func(t *testing.T) {
		v := newVerifier(t, auth.Config{})
		restricted := mustMint(t, []string{"buyers.read"}, time.Hour, []string{"acc-1"})
		p, err := verify(v, restricted, t0)
		if err != nil {
			t.Fatal(err)
		}
		p.Scopes[0] = "*.write"
		p.MerchantAccountIDs[0] = "acc-2"
		p2, err := verify(v, restricted, t0)
		if err != nil {
			t.Fatal(err)
		}
		if p2.Scopes[0] != "buyers.read" || p2.MerchantAccountIDs[0] != "acc-1" {
			t.Errorf("cached principal modified through a returned one: %+v", p2)
		}
	})
	t.Run("a hit needs the whole token", func(t *testing.T) {
		v := newVerifier(t, auth.Config{})
		if _, err := verify(v, tok, t0); err != nil {
			t.Fatal(err)
		}
		last := tok[len(tok)-1]
		for _, other := range []string{tok[:len(tok)-1], tok[:len(tok)-1] + string(last^1), tok + "A"} {
			_, err := verify(v, other, t0)
			wantAPIError(t, err, 401, "")
		}
		if n := auth.CacheLen(v); n != 1 {
			t.Errorf("cache holds %d", n)
		}
	})
	t.Run("copies of any size, all accounts stay all", func(t *testing.T) {
		v := newVerifier(t, auth.Config{})
		scopes := []string{"a.read", "b.read", "c.read", "d.read", "e.read"}
		for _, tc := range []struct {
			minted, accounts []string
			all              bool
		}{
			{nil, []string{auth.DefaultMerchantAccount}, false},
			{[]string{auth.AllMerchantAccounts}, nil, true},
			{[]string{"acc-1"}, []string{"acc-1"}, false},
			{[]string{"acc-1", "acc-2", "acc-3"}, []string{"acc-1", "acc-2", "acc-3"}, false},
		} {
			tok := mustMint(t, scopes, time.Hour, tc.minted)
			for range 2 { // a miss, then a hit
				p, err := verify(v, tok, t0)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(p.Scopes, scopes) || !slices.Equal(p.MerchantAccountIDs, tc.accounts) ||
					(tc.accounts == nil) != (p.MerchantAccountIDs == nil) || p.AllMerchantAccounts != tc.all {
					t.Fatalf("principal %+v, want scopes %v, accounts %#v and all %v", p, scopes, tc.accounts, tc.all)
				}
				if tc.accounts != nil && cap(p.Scopes) != len(p.Scopes) {
					t.Fatalf("an append to Scopes (cap %d) would overwrite the accounts", cap(p.Scopes))
				}
				p.Scopes[len(p.Scopes)-1] = "*.write"
				if tc.accounts != nil {
					p.MerchantAccountIDs[0] = "acc-9"
				}
				p.AllMerchantAccounts = !tc.all
			}
		}
	})
	t.Run("concurrent use", func(t *testing.T) {
		v := newVerifier(t, auth.Config{CacheSize: 2})
		tokens := make([]string, 4)
		for i := range tokens {
			tokens[i] = mustMint(t, []string{"buyers.read"}, time.Hour, nil)
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 40 {
					tok := tokens[(g+i)%len(tokens)]
					now := t0
					if i%7 == 0 {
						now = t0.Add(2 * time.Hour)
					}
					p, err := verify(v, tok, now)
					if (err == nil) != now.Equal(t0) || (err == nil && p.Require("buyers.read") != nil) {
						t.Errorf("token %d at %v: %v", (g+i)%len(tokens), now, err)
					}
				}
			})
		}
		wg.Wait()
		if n := auth.CacheLen(v); n > 2 {
			t.Errorf("cache holds %d", n)
		}
	})
}
