package appview

import (
	"context"
	"fmt"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/admins"
)

// ErrBootstrapRefused is matched (errors.Is) by the error Bootstrap
// returns when a super user already exists and the caller may not get a
// key this way; the error's text says what to do instead.
var ErrBootstrapRefused = admins.ErrBootstrapRefused

// Bootstrap makes did the instance's super user when no admin user exists
// yet (or, with forceNewKey, accepts did when it already is the super
// user), mints an admin API key holding every permission and returns its
// secret, which is shown only this once. It opens the database named by
// cfg (cfg.Store when set), applies pending migrations and closes what it
// opened; it starts nothing. The command's `admin bootstrap` runs it;
// App.Bootstrap does the same for an App a program already built.
func Bootstrap(ctx context.Context, cfg Config, did string, forceNewKey bool) (string, error) {
	if _, err := syntax.ParseDID(did); err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	var err error
	cfg = cfg.withStorageDefaults()
	store := cfg.Store
	if store == nil {
		if store, err = OpenStore(ctx, cfg.DatabaseURL); err != nil {
			return "", err
		}
		defer store.Close()
	}
	if err := store.Migrate(ctx); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	events := eventlog.New(eventlog.Options{Store: store, Now: cfg.Now, Logger: cfg.Logger})
	return bootstrap(ctx, admins.New(admins.Options{Store: store, Events: events, Now: cfg.Now, Logger: cfg.Logger}), did, forceNewKey)
}

// bootstrap is Bootstrap and App.Bootstrap on the admins service svc.
func bootstrap(ctx context.Context, svc *admins.Service, did string, forceNewKey bool) (string, error) {
	d, err := syntax.ParseDID(did)
	if err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	secret, err := svc.Bootstrap(ctx, d, forceNewKey)
	return secret, publicError(err)
}

// Permissions lists every admin permission name, sorted.
func Permissions() []string { return admins.NewSet(admins.All()).Sorted() }
