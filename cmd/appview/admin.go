package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
)

const adminUsage = `usage: appview admin bootstrap --did DID [--force-new-key]

  bootstrap   make DID the super user when no admin user exists yet, mint an
              admin API key holding every permission and print its secret.
              With --force-new-key, mint a new key for DID when DID is
              already the super user.
`

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
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	secret, err := appview.Bootstrap(ctx, cfg, did.String(), *force)
	if err != nil {
		fmt.Fprintf(stderr, "appview admin bootstrap: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, secret)
	return 0
}
