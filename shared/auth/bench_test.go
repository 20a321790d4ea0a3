package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/payorch/shared/auth"
)

// BenchmarkVerify measures a full ES512 verification (cache disabled): the
// cost of every first sight of a token.
func BenchmarkVerify(b *testing.B) {
	v := newVerifier(b, auth.Config{CacheSize: -1})
	header := "Bearer " + mustMint(b, []string{"buyers.write", "transactions.read"}, time.Hour, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, header, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyCached measures a repeat of a token already verified.
func BenchmarkVerifyCached(b *testing.B) {
	v := newVerifier(b, auth.Config{})
	header := "Bearer " + mustMint(b, []string{"buyers.write", "transactions.read"}, time.Hour, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, header, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyCachedParallel(b *testing.B) {
	v := newVerifier(b, auth.Config{})
	header := "Bearer " + mustMint(b, []string{"buyers.write"}, time.Hour, nil)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Verify(ctx, header, t0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkMint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := auth.Mint(keyA, testIssuer, []string{"buyers.write"}, time.Hour, t0, nil); err != nil {
			b.Fatal(err)
		}
	}
}
