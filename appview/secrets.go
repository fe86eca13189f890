package appview

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/lexview/lexview/oauth"
)

// tokenKeyFileName is the file, beside the SQLite database, that keeps the
// generated TOKEN_ENCRYPTION_KEY when none is configured.
const tokenKeyFileName = "token-encryption.key"

// errPostgresNeedsTokenKey is returned when PostgreSQL runs without an
// explicit TOKEN_ENCRYPTION_KEY: there is no local file system beside the
// database to keep a generated one safe.
var errPostgresNeedsTokenKey = errors.New("TOKEN_ENCRYPTION_KEY is required with PostgreSQL (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)")

// resolveEncryptionKey returns the 32-byte key that seals secrets at rest.
// A configured Security.TokenEncryptionKey must be base64 of exactly 32 bytes. When
// none is configured, SQLite keeps a generated key in a 0600 file beside
// its database file (sqlitePath), created on first use; PostgreSQL
// refuses to start.
func resolveEncryptionKey(cfg Config, dialect string, sqlitePath string) ([]byte, error) {
	if cfg.Security.TokenEncryptionKey != "" {
		key, err := oauth.ParseKey(cfg.Security.TokenEncryptionKey)
		if err != nil {
			return nil, fmt.Errorf("TOKEN_ENCRYPTION_KEY: %w", err)
		}
		return key, nil
	}
	switch dialect {
	case "sqlite":
		if sqlitePath == "" {
			return nil, errors.New("TOKEN_ENCRYPTION_KEY is not set and the SQLite database path is unknown")
		}
		path := filepath.Join(filepath.Dir(sqlitePath), tokenKeyFileName)
		key, created, err := oauth.LoadOrCreateKey(path)
		if err != nil {
			return nil, fmt.Errorf("TOKEN_ENCRYPTION_KEY is not set: %w", err)
		}
		if created {
			logger := cfg.Logger
			if logger == nil {
				logger = slog.Default()
			}
			logger.Info("TOKEN_ENCRYPTION_KEY is not set; generated a key for secrets at rest", "path", path)
		}
		return key, nil
	case "postgres":
		return nil, errPostgresNeedsTokenKey
	}
	return nil, fmt.Errorf("TOKEN_ENCRYPTION_KEY is required with the %q store", dialect)
}

// newSealer resolves the encryption key for the App's store.
func (a *App) newSealer() (*oauth.Sealer, error) {
	path := ""
	if p, ok := a.store.(interface{ Path() string }); ok {
		path = p.Path()
	}
	key, err := resolveEncryptionKey(a.cfg, a.store.Dialect(), path)
	if err != nil {
		return nil, err
	}
	return oauth.NewSealer(key)
}
