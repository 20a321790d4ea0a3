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

// maxRetireRounds bounds how often Retire rewraps data keys that appeared
// after it raised the bound.
const maxRetireRounds = 3

// Rotate adds a transit key version, rewraps every data key wrapped by an
// older one (batch by batch, each batch committed on its own), and
// optionally retires the old versions. It returns how many data keys it
// rewrapped. While data keys are still wrapped below the latest version it
// adds none: an earlier run stopped part-way, and this one resumes it.
func Rotate(ctx context.Context, tr Transit, st Store, opts RotateOptions) (int, error) {
	r := &rotation{tr: tr, st: st, opts: opts.withDefaults()}
	info, err := r.rotateOrResume(ctx)
	if err != nil {
		return 0, err
	}
	r.version = info.LatestVersion
	if err := r.rewrapAll(ctx, info.MinDecryptionVersion); err != nil || !opts.Retire {
		return r.done, err
	}
	return r.done, r.retire(ctx, info.MinDecryptionVersion)
}

func (o RotateOptions) withDefaults() RotateOptions {
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// rotation is one run of Rotate.
type rotation struct {
	tr      Transit
	st      Store
	opts    RotateOptions
	version int // the key version every data key is rewrapped to
	done    int // data keys rewrapped so far
}

// rotateOrResume adds a key version unless data keys are still wrapped below
// the latest one. Those are left by a run that stopped part-way (or stored
// after a retire's last look): rotating again would only restart the rewrap
// from the beginning, and never finish if runs keep stopping.
func (r *rotation) rotateOrResume(ctx context.Context) (transit.KeyInfo, error) {
	info, err := r.tr.Key(ctx, transit.CardKey)
	if err != nil {
		return info, err
	}
	pending, _, err := r.st.DataKeysToRewrap(ctx, info.LatestVersion, 1)
	if err != nil {
		return info, err
	}
	if len(pending) > 0 {
		fmt.Fprintf(r.opts.Progress, "data keys are still wrapped below version %d: resuming that rotation (run again afterwards to add a version)\n", info.LatestVersion)
		return info, nil
	}
	if err := r.tr.Rotate(ctx, transit.CardKey); err != nil {
		return info, err
	}
	if info, err = r.tr.Key(ctx, transit.CardKey); err != nil {
		return info, err
	}
	fmt.Fprintf(r.opts.Progress, "rotated %s to version %d\n", transit.CardKey, info.LatestVersion)
	return info, nil
}

// retire raises the bound to the new version, waits for stores already under
// way, and looks again. A data key of a retired version stored meanwhile
// could never be unwrapped again, nor its cards opened: it is rewrapped
// (rewrapAll lowers the bound for it) and the bound raised again. prev is
// the bound before the run, restored if retiring gives up.
func (r *rotation) retire(ctx context.Context, prev int) error {
	for round := 1; ; round++ {
		if err := r.setBound(ctx, r.version); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.opts.Settle):
		}
		_, late, err := r.st.DataKeysToRewrap(ctx, r.version, r.opts.BatchSize)
		if err != nil {
			return err
		}
		if len(late) == 0 {
			fmt.Fprintf(r.opts.Progress, "retired versions below %d\n", r.version)
			return nil
		}
		if round == maxRetireRounds {
			return r.giveUp(ctx, prev, late, round)
		}
		fmt.Fprintf(r.opts.Progress, "a data key of a retired version was stored meanwhile; rewrapping it\n")
		if err := r.rewrapAll(ctx, r.version); err != nil {
			return err
		}
	}
}

// giveUp lowers the bound back to prev, or further if a late key needs it,
// so that no late key is left unreadable. Late keys beyond this batch that
// are older still are rewrapped by the next run (rewrapAll).
func (r *rotation) giveUp(ctx context.Context, prev int, late []string, round int) error {
	oldest, err := oldestVersion(late)
	if err != nil {
		return err
	}
	if err := r.setBound(ctx, min(prev, oldest)); err != nil {
		return err
	}
	return fmt.Errorf("keys: data keys of the old versions were still being stored after %d rounds; versions below %d are not retired (run rotate -retire again)", round, r.version)
}

// rewrapAll rewraps every data key below r.version, batch by batch; bound is
// min_decryption_version in force. Vault rewraps only what it can still
// decrypt, so a batch holding keys below the bound (a retire stopped before
// its last look, or a key stored after it) first lowers the bound to their
// version; while the versions exist (never trimmed) Vault allows it. Once
// all are rewrapped the bound goes back up. After a failure it stays
// lowered: nothing is unreadable, and the next run finishes the rewrap.
func (r *rotation) rewrapAll(ctx context.Context, bound int) error {
	inForce := bound
	for {
		ids, wrapped, err := r.st.DataKeysToRewrap(ctx, r.version, r.opts.BatchSize)
		if err != nil {
			return r.stopped(err, bound, inForce)
		}
		if len(ids) == 0 {
			break
		}
		if inForce, err = r.lowerFor(ctx, wrapped, inForce); err != nil {
			return r.stopped(err, bound, inForce)
		}
		out, err := r.tr.Rewrap(ctx, transit.CardKey, wrapped)
		if err != nil {
			return r.stopped(err, bound, inForce)
		}
		if err := r.st.ReplaceWrapped(ctx, ids, out); err != nil {
			return r.stopped(err, bound, inForce)
		}
		r.done += len(ids)
		fmt.Fprintf(r.opts.Progress, "rewrapped %d data keys\n", r.done)
	}
	if inForce == bound {
		return nil
	}
	fmt.Fprintf(r.opts.Progress, "min decryption version back to %d\n", bound)
	return r.setBound(ctx, bound)
}

// lowerFor lowers the bound in force to the oldest version in wrapped if it
// is below, and returns the bound now in force.
func (r *rotation) lowerFor(ctx context.Context, wrapped []string, inForce int) (int, error) {
	oldest, err := oldestVersion(wrapped)
	if err != nil || oldest >= inForce {
		return inForce, err
	}
	fmt.Fprintf(r.opts.Progress, "data keys wrapped by version %d, below min decryption version %d: lowering it to rewrap them\n", oldest, inForce)
	if err := r.setBound(ctx, oldest); err != nil {
		return inForce, fmt.Errorf("keys: cannot lower min_decryption_version to %d to rewrap its data keys (was the version trimmed?): %w", oldest, err)
	}
	return oldest, nil
}

// stopped tells the operator, when rewrapAll stops with the bound lowered,
// where it was left: the next run does not know the bound it found.
func (r *rotation) stopped(err error, bound, inForce int) error {
	if inForce == bound {
		return err
	}
	return fmt.Errorf("%w (min decryption version left at %d, was %d: run rotate -retire to raise it again)", err, inForce, bound)
}

func (r *rotation) setBound(ctx context.Context, v int) error {
	return r.tr.SetMinDecryptionVersion(ctx, transit.CardKey, v)
}

// oldestVersion is the lowest transit version among wrapped.
func oldestVersion(wrapped []string) (int, error) {
	oldest := 0
	for _, w := range wrapped {
		v, err := postgres.TransitVersion(w)
		if err != nil {
			return 0, err
		}
		if oldest == 0 || v < oldest {
			oldest = v
		}
	}
	return oldest, nil
}
