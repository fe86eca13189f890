package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/codegen"
)

func codegenCommand() *command {
	return &command{
		name: "codegen", synopsis: "--lang ts|go --out DIR (--app DIR | --url URL)",
		summary: "write a typed TypeScript or Go client of an app's XRPC methods",
		about: "Writes a typed client of the XRPC methods of an app's lexicons to the folder\n" +
			"DIR (created when absent; see docs/apps.md#typed-clients): types for every\n" +
			"record, object, query and procedure (parameters, input, output, declared\n" +
			"errors), and a client that sends the API client key, lets the app sign\n" +
			"requests (DPoP), pages cursors and turns error answers into typed errors.\n" +
			"--lang ts writes client.ts, one ES module on fetch; --lang go writes\n" +
			"client.go and lexicons.go, a package that needs only the standard library.\n\n" +
			"The lexicons come from the app folder of --app, or from the running instance\n" +
			"of --url through its admin API, with the admin API key (hv_...) in the\n" +
			"environment variable ADMIN_KEY (or .env); the key needs lexicons:read,\n" +
			"scripts:read, indexes:read and script-variables:read.",
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			lang := fs.String("lang", "", "the language: `ts` or go")
			out := fs.String("out", "", "write the client to the folder `DIR`")
			app := fs.String("app", "", "read the lexicons of the app folder `DIR`")
			remoteURL := fs.String("url", "", "read the lexicons of the instance at `URL` (ADMIN_KEY)")
			pkg := fs.String("package", "lexclient", "the Go package `name`")
			return func(ctx context.Context, x *invocation) int {
				switch {
				case *lang != string(codegen.TypeScript) && *lang != string(codegen.Go):
					return x.usageError("--lang must be ts or go")
				case *out == "":
					return x.usageError("missing --out DIR")
				case (*app == "") == (*remoteURL == ""):
					return x.usageError("give one of --app DIR and --url URL")
				}
				def, err := codegenSource(ctx, *app, *remoteURL)
				if err == nil {
					err = writeClient(def, codegen.Options{Lang: codegen.Lang(*lang), Package: *pkg}, *out, x)
				}
				if err != nil {
					fmt.Fprintf(x.stderr, "appview codegen: %v\n", err)
					return 1
				}
				return 0
			}
		},
	}
}

// codegenSource reads the app definition codegen works from: the folder
// app, or the instance at remoteURL.
func codegenSource(ctx context.Context, app, remoteURL string) (*appfolder.Definition, error) {
	if app != "" {
		if _, err := os.Stat(app); err != nil {
			return nil, err
		}
		return appfolder.Load(app)
	}
	if err := loadDotEnv(".env"); err != nil {
		return nil, fmt.Errorf(".env: %w", err)
	}
	key := os.Getenv(adminKeyEnv)
	if key == "" {
		return nil, fmt.Errorf("--url needs an admin API key in %s", adminKeyEnv)
	}
	return appfolder.Remote(remoteURL, key, &http.Client{Timeout: remoteTimeout}).Read(ctx)
}

// writeClient generates the client of def and writes it to dir.
func writeClient(def *appfolder.Definition, opt codegen.Options, dir string, x *invocation) error {
	if len(def.Lexicons) == 0 {
		return errors.New("the app has no lexicons")
	}
	gen, err := codegen.Generate(codegen.FromDefinition(def), opt)
	if err != nil {
		return err
	}
	for _, w := range gen.Warnings {
		fmt.Fprintf(x.stderr, "warning: %s\n", w)
	}
	if err := gen.Write(dir); err != nil {
		return err
	}
	var names []string
	for name := range gen.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Fprintf(x.stdout, "wrote the %s client of %s to %s (%s)\n", opt.Lang, plural(len(def.Lexicons), "lexicon"), dir, strings.Join(names, ", "))
	return nil
}
