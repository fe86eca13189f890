package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/lexview/lexview/appview/apptest"
)

func testCommand() *command {
	return &command{
		name: "test", synopsis: "DIR", nargs: 1, scope: scopeNone,
		summary: "run the tests of an app folder on throwaway instances",
		about: "Runs the tests the app folder DIR declares (tests/*.json; see docs/apps.md,\n" +
			"section Testing), each on a throwaway instance of its own: SQLite in a\n" +
			"temporary folder, the folder applied to it, the test's fixture records\n" +
			"indexed, and a stand-in PDS that records the writes of procedures. It\n" +
			"reads no configuration and reaches no network. It prints PASS or FAIL\n" +
			"for each test, with what differs for a failure, and exits with status 1\n" +
			"when a test failed or the folder has a problem.",
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			pattern := fs.String("run", "", "run only the tests whose names match the regular expression `REGEXP`")
			verbose := fs.Bool("v", false, "show the instances' warnings and errors on stderr")
			return func(_ context.Context, x *invocation) int {
				opt := apptest.Options{Progress: func(r apptest.Result) { r.Print(x.stdout) }}
				if *pattern != "" {
					re, err := regexp.Compile(*pattern)
					if err != nil {
						return x.usageError("--run: %v", err)
					}
					opt.Select = re.MatchString
				}
				if *verbose {
					opt.Logger = slog.New(slog.NewTextHandler(x.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				}
				suite, err := apptest.Load(x.args[0])
				if err != nil {
					fmt.Fprintf(x.stderr, "appview test: %v\n", err)
					return 1
				}
				ctx, stop := signalContext()
				defer stop()
				report := apptest.Run(ctx, suite, opt)
				if len(report.Results) == 0 {
					fmt.Fprintf(x.stderr, "appview test: no tests in %s/%s\n", x.args[0], apptest.TestDir)
					return 1
				}
				apptest.Summary(x.stdout, report)
				if !report.Passed() {
					return 1
				}
				return 0
			}
		},
	}
}
