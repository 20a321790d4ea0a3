package vaulting_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"testing"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/vaulting"
)

// The card vault's figures, each against a baseline in the same process
// (deploy/local/bench.sh computes the ratios; BENCHMARKS.md, "Card vault"):
//
//   - BenchmarkOpenCached vs BenchmarkRawAESGCMOpen: open a stored record
//     whose data key is cached, against a bare AES-256-GCM open of a record
//     of the same size. Every record has its own key, so the baseline
//     includes the key schedule (aes.NewCipher + cipher.NewGCM);
//     BenchmarkRawAESGCMOpenPrebuilt shows a bare open without it.
//   - BenchmarkVaultCard vs BenchmarkBareInsert: validate, fingerprint,
//     seal, store and audit a card, against a bare pgx insert of the same
//     row, with the same parallelism on the real PostgreSQL; Vault is called
//     only for the first data key.

// recordPayload is the size of a sealed card record (version, lengths, PAN).
var recordPayload = []byte("\x01\x00\x104111111111111111\x00\x00")

func BenchmarkOpenCached(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	tok := uuid.New()
	aad := vaulting.AAD("m1", tok)
	rec, err := e.sealer.Seal(ctx, recordPayload, aad)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.sealer.Open(ctx, rec, aad); err != nil { // warm the data key cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pt, err := e.sealer.Open(ctx, rec, aad)
		if err != nil {
			b.Fatal(err)
		}
		clear(pt)
	}
}

// BenchmarkRevealCached opens two cards whose rows and record keys are
// cached, as every forward of e2e's BenchmarkForwardVault does.
func BenchmarkRevealCached(b *testing.B) {
	f := setup(b)
	ctx := context.Background()
	tokens := []uuid.UUID{f.vault(b, "m1", testPANs[0], "").Token, f.vault(b, "m1", testPANs[1], "").Token}
	b.ReportAllocs()
	for b.Loop() {
		cards, o, err := f.svc.Reveal(ctx, caller("m1"), "forward", "vault-forward", tokens, false)
		if err != nil {
			b.Fatal(err)
		}
		o.Release()
		for _, c := range cards {
			c.Zero()
		}
	}
}

func rawRecord(b *testing.B) (key, nonce, ct, aad []byte) {
	key = make([]byte, 32)
	nonce = make([]byte, 12)
	_, _ = rand.Read(key)
	_, _ = rand.Read(nonce)
	blk, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(blk)
	aad = vaulting.AAD("m1", uuid.New())
	return key, nonce, g.Seal(nil, nonce, recordPayload, aad), aad
}

func BenchmarkRawAESGCMOpen(b *testing.B) {
	key, nonce, ct, aad := rawRecord(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		blk, _ := aes.NewCipher(key)
		g, _ := cipher.NewGCM(blk)
		if _, err := g.Open(nil, nonce, ct, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawAESGCMOpenPrebuilt(b *testing.B) {
	key, nonce, ct, aad := rawRecord(b)
	blk, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(blk)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.Open(nil, nonce, ct, aad); err != nil {
			b.Fatal(err)
		}
	}
}

const benchParallelism = 4 // x GOMAXPROCS goroutines, for both sides

func BenchmarkVaultCard(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	c := vaulting.Caller{MerchantAccountID: "m1", Actor: "bench"}
	if _, err := e.svc.VaultCard(ctx, c, vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"), ExpirationDate: "12/30"}); err != nil {
		b.Fatal(err) // first data key: the one Vault round trip
	}
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, err := e.svc.VaultCard(ctx, c, vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"), ExpirationDate: "12/30"})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkBareInsert(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	// A real data key row for the foreign key, then the same row shape the
	// vault writes, with random bytes of the same sizes.
	rec, err := e.sealer.Seal(ctx, recordPayload, []byte("x"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, err := e.db.Pool.Exec(ctx, `INSERT INTO vaulted_cards (id, merchant_account_id, kind, data_key_id, wrapped_record_key, ciphertext,
				fingerprint, scheme, card_type, bin, last4, expiration_date) VALUES ($1, 'm1', 'card', $2, $3, $4, 'fp_x', 'visa', '', '41111111', '1111', '12/30')`,
				uuid.New(), rec.DataKeyID, rec.WrappedKey, rec.Ciphertext)
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
