package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// WithStatementTimeout returns dsn (a URL or keyword/value connection
// string) with PostgreSQL's statement_timeout set to d for every
// connection made with it, unless dsn sets one already: the operator's
// choice stands. When a request's deadline passes, pgx closes the
// connection and sends the server a cancel request, asynchronously; this
// bounds a statement whose cancel request is lost, so none outlives the
// request that started it by more than d. Migrations do not run under it:
// `core-api migrate` connects with the owner role's own URL.
func WithStatementTimeout(dsn string, d time.Duration) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err) // pgconn's message hides the password
	}
	if _, set := cfg.RuntimeParams["statement_timeout"]; set {
		return dsn, nil
	}
	param := "statement_timeout=" + strconv.FormatInt(d.Milliseconds(), 10)
	switch {
	case !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return dsn + " " + param, nil
	case strings.Contains(dsn, "?"):
		return dsn + "&" + param, nil
	}
	// Not through net/url: it refuses the multi-host URLs pgconn takes.
	return dsn + "?" + param, nil
}
