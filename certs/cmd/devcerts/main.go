// Command devcerts creates (or keeps) the development PKI used between
// vault-proxy and core-api and by vault-proxy's public listener.
//
//	devcerts -dir .data/certs
//
// It writes nothing when the existing files are sound and not expiring
// within a week; otherwise it regenerates the whole set. See
// certs.WriteDevPKI.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/payorch/certs"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, time.Now); err != nil {
		fmt.Fprintln(os.Stderr, "devcerts:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer, now func() time.Time) error {
	fs := flag.NewFlagSet("devcerts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", filepath.Join(".data", "certs"), "directory of the development PKI (created with mode 0700)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	res, err := certs.EnsureDevPKI(*dir, now())
	if res.Reason != "" {
		fmt.Fprintf(stdout, "regenerating development PKI in %s: %s\n", *dir, res.Reason)
	}
	for _, name := range res.Written {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*dir, name))
	}
	for _, name := range res.Kept {
		fmt.Fprintf(stdout, "kept  %s\n", filepath.Join(*dir, name))
	}
	return err
}
