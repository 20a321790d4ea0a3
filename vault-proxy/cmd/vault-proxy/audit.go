package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/payorch/shared/config"
	"github.com/payorch/vault-proxy/postgres"
)

// anchors collects -anchor flags.
type anchors []postgres.AuditLink

func (a *anchors) String() string { return fmt.Sprint(*a) }

func (a *anchors) Set(s string) error {
	l, err := postgres.ParseAuditLink(s)
	if err == nil {
		*a = append(*a, l)
	}
	return err
}

// auditCmd runs `vault-proxy audit verify [-anchor ID:HASH]...` with
// VAULT_PROXY_DATABASE_URL (the runtime role reads the audit trail): it
// walks the audit chain and fails, naming the first broken link, when a
// record was changed, removed or added behind vault-proxy's back, or when
// an anchor (the head an earlier run printed, kept elsewhere) is no
// longer in the chain.
func auditCmd(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return fmt.Errorf("audit: verify")
	}
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	var want anchors
	fs.Var(&want, "anchor", "ID:HASH, a head an earlier verify printed, that must still be in the chain (repeatable)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	l := config.NewLoader(config.EnvironLookup(os.Environ()))
	dsn := l.Secret("VAULT_PROXY_DATABASE_URL").Reveal()
	if err := l.Err(); err != nil {
		return err
	}
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.VerifyAuditChain(ctx, want...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "audit chain verified: %d records after record %d (the records up to it predate the chain)\n", c.Records, c.StartedAfter)
	if c.Records > 0 {
		fmt.Fprintf(out, "head (keep it elsewhere; a later verify can check it with -anchor): %s\n", c.Head)
	}
	return nil
}
