//go:build !linux

package nodump

// Apply does nothing outside Linux. vault-proxy runs in production on
// Linux hosts only (deploy/production); this lets it build and run for
// development elsewhere.
func Apply() error { return nil }
