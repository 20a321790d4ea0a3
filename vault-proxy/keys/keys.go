// Package keys is vault-proxy's key management: rotate the transit key and
// rewrap every stored data key under the new version, in batches, without a
// data key or a card ever leaving Vault in plaintext; and report which key
// versions protect how many records.
package keys

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/vault-proxy/postgres"
)

// Transit is what key management needs from Vault (the key-admin policy).
type Transit interface {
	Key(ctx context.Context, key string) (transit.KeyInfo, error)
	Rotate(ctx context.Context, key string) error
	Rewrap(ctx context.Context, key string, ciphertexts []string) ([]string, error)
	SetMinDecryptionVersion(ctx context.Context, key string, v int) error
}

// Store is what key management needs from the vault database.
type Store interface {
	DataKeysToRewrap(ctx context.Context, version, limit int) ([]uuid.UUID, []string, error)
	ReplaceWrapped(ctx context.Context, ids []uuid.UUID, wrapped []string) error
	KeyVersions(ctx context.Context) ([]postgres.VersionCount, error)
}

// Status is the state of the card key.
type Status struct {
	LatestVersion        int
	MinDecryptionVersion int
	InUse                []postgres.VersionCount
}

// GetStatus reads key metadata from Vault and usage from the database.
func GetStatus(ctx context.Context, tr Transit, st Store) (Status, error) {
	info, err := tr.Key(ctx, transit.CardKey)
	if err != nil {
		return Status{}, err
	}
	use, err := st.KeyVersions(ctx)
	if err != nil {
		return Status{}, err
	}
	return Status{LatestVersion: info.LatestVersion, MinDecryptionVersion: info.MinDecryptionVersion, InUse: use}, nil
}

// Print writes s for an operator.
func (s Status) Print(w io.Writer) {
	fmt.Fprintf(w, "key %s: latest version %d, min decryption version %d\n", transit.CardKey, s.LatestVersion, s.MinDecryptionVersion)
	if len(s.InUse) == 0 {
		fmt.Fprintln(w, "  no data keys stored")
	}
	for _, v := range s.InUse {
		fmt.Fprintf(w, "  v%d: %d data keys, %d records\n", v.Version, v.DataKeys, v.Records)
	}
}

// RotateOptions tune a rotation.
type RotateOptions struct {
	BatchSize int  // data keys per rewrap call; default 100
	Retire    bool // after rewrapping everything, set min_decryption_version to the new version
	// Settle is how long Retire waits after raising the bound before it
	// looks for data keys of the retired versions once more (default 2 s).
	// A vault-proxy stores a new data key before it unwraps it
	// (envelope), so any key that can seal a card is stored before the
	// bound rises; the wait only lets stores under way commit.
	Settle   time.Duration
	Progress io.Writer
}

// maxRetireRounds bounds how often Retire lowers the bound again for data
// keys that appeared after it was raised.
const maxRetireRounds = 3

// Rotate adds a transit key version, rewraps every data key wrapped by an
// older one (batch by batch, each batch committed on its own so an
// interrupted run resumes where it stopped), and optionally retires the old
// versions. It returns how many data keys it rewrapped.
func Rotate(ctx context.Context, tr Transit, st Store, opts RotateOptions) (int, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 100
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if err := tr.Rotate(ctx, transit.CardKey); err != nil {
		return 0, err
	}
	info, err := tr.Key(ctx, transit.CardKey)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(opts.Progress, "rotated %s to version %d\n", transit.CardKey, info.LatestVersion)
	done, err := rewrapAll(ctx, tr, st, info.LatestVersion, opts, 0)
	if err != nil || !opts.Retire {
		return done, err
	}
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Second
	}
	// Raise the bound, wait for stores already under way, look again. A
	// data key of a retired version stored meanwhile could never be
	// unwrapped again, and its cards never opened: the bound goes back
	// down (Vault rewraps only what it can still decrypt), the key is
	// rewrapped, and the bound goes up again.
	for round := 1; ; round++ {
		if err := tr.SetMinDecryptionVersion(ctx, transit.CardKey, info.LatestVersion); err != nil {
			return done, err
		}
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(opts.Settle):
		}
		late, _, err := st.DataKeysToRewrap(ctx, info.LatestVersion, 1)
		if err != nil {
			return done, err
		}
		if len(late) == 0 {
			break
		}
		// Lower the bound again first: a key it covers could never be
		// unwrapped, nor its cards opened.
		if err := tr.SetMinDecryptionVersion(ctx, transit.CardKey, info.MinDecryptionVersion); err != nil {
			return done, err
		}
		if round == maxRetireRounds {
			return done, fmt.Errorf("keys: data keys of the old versions were still being stored after %d rounds; versions below %d are not retired (run rotate -retire again)", round, info.LatestVersion)
		}
		fmt.Fprintf(opts.Progress, "a data key of a retired version was stored meanwhile; rewrapping it\n")
		if done, err = rewrapAll(ctx, tr, st, info.LatestVersion, opts, done); err != nil {
			return done, err
		}
	}
	fmt.Fprintf(opts.Progress, "retired versions below %d\n", info.LatestVersion)
	return done, nil
}

// rewrapAll rewraps every data key below version, batch by batch, and
// returns the running count from done.
func rewrapAll(ctx context.Context, tr Transit, st Store, version int, opts RotateOptions, done int) (int, error) {
	for {
		ids, wrapped, err := st.DataKeysToRewrap(ctx, version, opts.BatchSize)
		if err != nil {
			return done, err
		}
		if len(ids) == 0 {
			return done, nil
		}
		out, err := tr.Rewrap(ctx, transit.CardKey, wrapped)
		if err != nil {
			return done, err
		}
		if err := st.ReplaceWrapped(ctx, ids, out); err != nil {
			return done, err
		}
		done += len(ids)
		fmt.Fprintf(opts.Progress, "rewrapped %d data keys\n", done)
	}
}
