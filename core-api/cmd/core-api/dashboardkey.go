package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/payorch/shared/auth"
)

// dashboardKey runs `core-api dashboard-key`: the key that signs the
// dashboard's tokens (CORE_API_DASHBOARD_KEY_DIR), created if missing,
// or replaced with -rotate. A rotation keeps the previous public key in
// public-keys.pem, so the tokens it signed (15 minutes at most) verify
// until they expire; restart the instances, and give vault-proxy the
// new public-keys.pem (VAULT_PROXY_DASHBOARD_KEYS_FILE), before the new
// key signs. Drop the old public key from the file once they have.
func dashboardKey(args []string, out io.Writer) error {
	fset := flag.NewFlagSet("dashboard-key", flag.ContinueOnError)
	keyDir := fset.String("key-dir", ".data/dashboard-auth", "folder holding signing-key.pem and public-keys.pem")
	rotate := fset.Bool("rotate", false, "replace the signing key with a new one, keeping the old public key")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *rotate {
		old := filepath.Join(*keyDir, auth.SigningKeyFile)
		if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dashboard-key: %w", err)
		}
	}
	priv, err := auth.LoadSigningKeyDir(*keyDir)
	if err != nil {
		return fmt.Errorf("dashboard-key: %w", err)
	}
	kid, err := auth.Thumbprint(&priv.PublicKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dashboard signing key %s in %s\n", kid, *keyDir)
	return nil
}
