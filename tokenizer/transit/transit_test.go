package transit_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/tokenizer/transit/transittest"
)

func TestTransitAgainstRealVault(t *testing.T) {
	env := transittest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := env.Service.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}

	wrapped, err := env.Service.WrappedDataKey(ctx, transit.CardKey)
	if err != nil {
		t.Fatalf("datakey: %v", err)
	}
	if !strings.HasPrefix(wrapped, "vault:v1:") {
		t.Fatalf("wrapped key %q is not a v1 transit ciphertext", wrapped)
	}
	dk, err := env.Service.Decrypt(ctx, transit.CardKey, wrapped)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	if len(dk) != 32 {
		t.Fatalf("data key is %d bytes, want 32", len(dk))
	}

	t.Run("fingerprint key matches Vault's own HMAC", func(t *testing.T) {
		key, err := env.Service.HMACKey(ctx, transit.FingerprintKey)
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		in := []byte("some input")
		got, err := env.Service.HMAC(ctx, transit.FingerprintKey, in)
		if err != nil {
			t.Fatalf("hmac: %v", err)
		}
		m := hmac.New(sha256.New, key)
		m.Write(in)
		want := "vault:v1:" + base64.StdEncoding.EncodeToString(m.Sum(nil))
		if got != want {
			t.Fatalf("local HMAC with exported key differs from Vault's")
		}
	})

	t.Run("service policy cannot administer keys", func(t *testing.T) {
		if err := env.Service.Rotate(ctx, transit.CardKey); err == nil {
			t.Fatal("service token rotated the key; the policy is too broad")
		}
		if _, err := env.Service.Rewrap(ctx, transit.CardKey, []string{wrapped}); err == nil {
			t.Fatal("service token could rewrap; the policy is too broad")
		}
		if err := env.Service.SetMinDecryptionVersion(ctx, transit.CardKey, 1); err == nil {
			t.Fatal("service token could change key config")
		}
	})

	t.Run("key admin cannot unwrap data keys", func(t *testing.T) {
		if _, err := env.KeyAdmin.Decrypt(ctx, transit.CardKey, wrapped); err == nil {
			t.Fatal("key-admin token decrypted a data key")
		}
	})

	t.Run("rotate then rewrap keeps keys readable", func(t *testing.T) {
		if err := env.KeyAdmin.Rotate(ctx, transit.CardKey); err != nil {
			t.Fatalf("rotate: %v", err)
		}
		info, err := env.KeyAdmin.Key(ctx, transit.CardKey)
		if err != nil {
			t.Fatalf("key: %v", err)
		}
		if info.LatestVersion != 2 {
			t.Fatalf("latest version %d, want 2", info.LatestVersion)
		}
		out, err := env.KeyAdmin.Rewrap(ctx, transit.CardKey, []string{wrapped})
		if err != nil {
			t.Fatalf("rewrap: %v", err)
		}
		if !strings.HasPrefix(out[0], "vault:v2:") {
			t.Fatalf("rewrapped key %q is not v2", out[0])
		}
		again, err := env.Service.Decrypt(ctx, transit.CardKey, out[0])
		if err != nil {
			t.Fatalf("decrypt rewrapped: %v", err)
		}
		if !bytes.Equal(again, dk) {
			t.Fatal("rewrapped data key differs from the original")
		}
		if err := env.KeyAdmin.SetMinDecryptionVersion(ctx, transit.CardKey, 2); err != nil {
			t.Fatalf("retire v1: %v", err)
		}
		if _, err := env.Service.Decrypt(ctx, transit.CardKey, wrapped); err == nil {
			t.Fatal("a v1 ciphertext still decrypts after min_decryption_version=2")
		}
	})
}

func TestNewRequiresAddressAndToken(t *testing.T) {
	for _, cfg := range []transit.Config{{}, {Addr: "http://127.0.0.1:1"}, {Token: "x"}} {
		if _, err := transit.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
