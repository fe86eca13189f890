package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lib/pq"
)

// MinServerVersion is the oldest PostgreSQL release Lexview runs on, as
// the server's server_version_num counts it (17.0).
const MinServerVersion = 170000

// ErrUnsupportedServer is matched (errors.Is) by the error Open returns
// when the server is older than MinServerVersion.
var ErrUnsupportedServer = errors.New("unsupported PostgreSQL version")

// checkServer connects to the database and checks that the server is
// recent enough.
func checkServer(ctx context.Context, db *sql.DB) error {
	if err := db.PingContext(ctx); err != nil {
		return connectError(err)
	}
	var num int
	var version string
	err := db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version')`).
		Scan(&num, &version)
	if err != nil {
		return fmt.Errorf("postgres: read the server version: %w", err)
	}
	return checkVersion(num, version)
}

// checkVersion refuses servers older than MinServerVersion; num is
// server_version_num and version server_version, which the error names.
func checkVersion(num int, version string) error {
	if num < MinServerVersion {
		return fmt.Errorf("postgres: the server runs PostgreSQL %s (server_version_num %d), and Lexview requires PostgreSQL 17 or newer (%d): %w; "+
			"on Debian and Ubuntu, install postgresql-17 from the PostgreSQL project's apt repository, apt.postgresql.org (docs/production.md)",
			version, num, MinServerVersion, ErrUnsupportedServer)
	}
	return nil
}

// connectError wraps a failure to connect, adding what to do when lib/pq's
// message does not say it.
func connectError(err error) error {
	if errors.Is(err, pq.ErrSSLNotSupported) {
		return fmt.Errorf("postgres: connect: %w: lib/pq requires TLS unless the URL says otherwise; "+
			"add sslmode=disable to DATABASE_URL for a server on this host or a trusted network, "+
			"or enable TLS on the server (and use sslmode=verify-full)", err)
	}
	return fmt.Errorf("postgres: connect: %w", err)
}
