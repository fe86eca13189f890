package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
)

func bootstrapCommand() *command {
	return &command{
		name: "admin bootstrap", synopsis: "--did DID [--force-new-key]", scope: scopeDatabase,
		summary: "make DID the super user and print an admin API key",
		about: "Makes DID the super user when no admin user exists yet, mints an admin API\n" +
			"key holding every permission and prints its hv_... secret once on stdout.\n" +
			"Refuses (exit status 1) when a super user already exists, unless\n" +
			"--force-new-key is given for that same DID (then it mints another key).\n" +
			"It is how a fresh instance is claimed: run it with the instance's\n" +
			"configuration (its DATABASE_URL), whether the instance runs or not, then\n" +
			"sign in to the dashboard with the key. See ADMIN_CLAIM for the other ways.",
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			didFlag := fs.String("did", "", "the `DID` to make the super user (required)")
			force := fs.Bool("force-new-key", false, "mint another key when DID already is the super user")
			return func(ctx context.Context, x *invocation) int {
				if *didFlag == "" {
					return x.usageError("--did is required")
				}
				did, err := syntax.ParseDID(*didFlag)
				if err != nil {
					return x.usageError("%q is not a valid DID", *didFlag)
				}
				ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
				defer cancel()
				secret, err := appview.Bootstrap(ctx, x.cfg, did.String(), *force)
				if err != nil {
					fmt.Fprintf(x.stderr, "appview admin bootstrap: %v\n", err)
					return 1
				}
				fmt.Fprintln(x.stdout, secret)
				return 0
			}
		},
	}
}
