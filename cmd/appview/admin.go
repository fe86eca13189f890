package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/admin"
	"github.com/lexview/lexview/appview/admin/users"
	"github.com/lexview/lexview/appview/eventlog"
	"github.com/lexview/lexview/storage"
)

const adminUsage = `usage: appview admin bootstrap --did DID [--force-new-key]

  bootstrap   make DID the super user when no admin user exists yet, mint an
              admin API key holding every permission and print its secret.
              With --force-new-key, mint a new key for DID when DID is
              already the super user.
`

// errRefused is a bootstrap the command declines; its message is printed
// as is.
type errRefused struct{ msg string }

func (e errRefused) Error() string { return e.msg }

// adminCommand runs `appview admin ...` and returns the exit code.
func adminCommand(ctx context.Context, cfg appview.Config, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "bootstrap" {
		fmt.Fprint(stderr, adminUsage)
		return 2
	}
	fs := flag.NewFlagSet("appview admin bootstrap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage) }
	didFlag := fs.String("did", "", "the DID of the super user")
	force := fs.Bool("force-new-key", false, "mint a new key for the existing super user")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "appview admin bootstrap: unexpected argument %q\n\n%s", fs.Arg(0), adminUsage)
		return 2
	}
	if *didFlag == "" {
		fmt.Fprintf(stderr, "appview admin bootstrap: --did is required\n\n%s", adminUsage)
		return 2
	}
	did, err := syntax.ParseDID(*didFlag)
	if err != nil {
		fmt.Fprintf(stderr, "appview admin bootstrap: %q is not a valid DID\n", *didFlag)
		return 2
	}
	secret, err := bootstrap(ctx, cfg, did, *force)
	var refused errRefused
	if errors.As(err, &refused) {
		fmt.Fprintf(stderr, "appview admin bootstrap: %s\n", refused.msg)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "appview admin bootstrap: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, secret)
	return 0
}

// bootstrap makes did the super user if no admin user exists, or, with
// force, accepts did when it already is the super user; then it mints an
// API key holding every permission and returns its secret.
func bootstrap(ctx context.Context, cfg appview.Config, did syntax.DID, force bool) (string, error) {
	url := cfg.DatabaseURL
	if url == "" {
		url = appview.DefaultDatabaseURL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	store, err := appview.OpenStore(ctx, url)
	if err != nil {
		return "", err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	events := eventlog.New(store, time.Now, log)

	all := admin.NewSet(admin.All()).Sorted()
	u := storage.AdminUser{ID: storage.NewID(), DID: did.String(), IsSuper: true, Permissions: all, CreatedAt: time.Now()}
	stored, err := store.BootstrapSuperUser(ctx, u)
	if err != nil {
		return "", err
	}
	if stored {
		events.Record(ctx, eventlog.Entry{Type: "user.bootstrapped", ActorDID: u.DID, Subject: u.DID,
			Detail: map[string]any{"user_id": u.ID, "via": "command"}})
	} else {
		existing, err := store.GetAdminUserByDID(ctx, did.String())
		switch {
		case err == nil && existing.IsSuper && force:
			u = existing
		case err == nil && existing.IsSuper:
			return "", errRefused{fmt.Sprintf("%s is already the super user; pass --force-new-key to mint a new API key for it", did)}
		case err == nil || errors.Is(err, storage.ErrNotFound):
			return "", errRefused{refusal(ctx, store, did)}
		default:
			return "", err
		}
	}
	secret, key, err := users.MintKey(ctx, store, u.ID, "bootstrap", all, time.Now())
	if err != nil {
		return "", err
	}
	events.Record(ctx, eventlog.Entry{Type: "api_key.created", ActorDID: u.DID, Subject: key.ID,
		Detail: map[string]any{"name": key.Name, "key_prefix": key.Prefix, "permissions": key.Permissions, "user_id": u.ID, "via": "command"}})
	log.Info("admin API key minted", "did", u.DID, "key_id", key.ID, "new_super_user", stored)
	return secret, nil
}

// refusal explains why did cannot be bootstrapped: admin users exist and
// did is not the super user.
func refusal(ctx context.Context, store storage.AdminStore, did syntax.DID) string {
	all, _ := store.ListAdminUsers(ctx)
	for _, u := range all {
		if u.IsSuper {
			return fmt.Sprintf("a super user already exists (%s); refusing to bootstrap %s. "+
				"Only the super user can get a new key this way (--force-new-key --did %s)", u.DID, did, u.DID)
		}
	}
	return fmt.Sprintf("admin users already exist; refusing to bootstrap %s", did)
}
