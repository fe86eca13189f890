package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lexview/lexview/appview"
)

// command is one subcommand of appview.
type command struct {
	name     string // as typed: "serve", "admin bootstrap"
	synopsis string // what follows the name in its usage line: "FILE", "--did DID [--force-new-key]"
	summary  string // one line, for the overview
	about    string // what it does, for its help
	nargs    int    // the exact number of positional arguments
	scope    scope  // the settings it reads
	// defaults are the command's own defaults of settings, by environment
	// variable: they apply when neither a flag nor the environment (or
	// .env) gives one (dev's database).
	defaults map[string]string
	// define registers the command's own flags, if any, and returns what
	// runs it once the flags are parsed.
	define func(fs *flag.FlagSet) func(ctx context.Context, x *invocation) int
}

// commands lists every subcommand, in the order the overview shows them.
func commands() []*command {
	return []*command{serveCommand(), devCommand(), migrateCommand(), importCommand(), applyCommand(), exportCommand(),
		testCommand(), codegenCommand(), bootstrapCommand(), versionCommand()}
}

// invocation is one run of a command: its arguments, its configuration and
// where it writes.
type invocation struct {
	cmd            *command
	args           []string // positional arguments
	cfg            appview.Config
	log            *slog.Logger
	stdout, stderr io.Writer
}

// failed logs err as the command's failure and returns exit status 1.
func (x *invocation) failed(err error) int {
	x.log.Error("appview "+x.cmd.name+" failed", "err", err)
	return 1
}

// usageError reports a misuse of the command on stderr, with its usage
// line, and returns exit status 2.
func (x *invocation) usageError(format string, a ...any) int {
	return x.cmd.usageError(x.stderr, fmt.Sprintf(format, a...))
}

func (c *command) usageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "appview %s: %s\n%s\nRun 'appview %s --help' for its flags and environment variables.\n",
		c.name, msg, c.usageLine(), c.name)
	return 2
}

func (c *command) usageLine() string {
	line := "usage: appview " + c.name
	if c.scope > scopeNone {
		line += " [flags]"
	}
	if c.synopsis != "" {
		line += " " + c.synopsis
	}
	return line
}

// flagSet returns the command's flags (its own and those of its settings)
// and what runs it. A setting's flag stores its value in overrides, under
// the setting's environment variable.
func (c *command) flagSet(overrides map[string]string) (*flag.FlagSet, func(context.Context, *invocation) int) {
	fs := flag.NewFlagSet("appview "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports parse errors itself
	fs.Usage = func() {}
	runCmd := c.define(fs)
	for _, s := range settingsFor(c.scope) {
		if s.flag == "" {
			continue
		}
		fs.Func(s.flag, "overrides "+s.env, func(v string) error {
			if s.parse != nil {
				if err := s.parse(v); err != nil {
					return err
				}
			}
			overrides[s.env] = v
			return nil
		})
	}
	return fs, runCmd
}

// printHelp writes the command's help: usage, what it does, its flags and
// the environment variables it reads.
func (c *command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n\n%s\n", c.usageLine(), c.about)
	settingFlags := map[string]setting{}
	for _, s := range settingsFor(c.scope) {
		if s.flag != "" {
			settingFlags[s.flag] = s
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) { // command's own flags first
		if _, ok := settingFlags[f.Name]; !ok {
			arg, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(tw, "  --%s\t%s\n", strings.TrimSpace(f.Name+" "+arg), usage)
		}
	})
	for _, s := range settingsFor(c.scope) {
		if s.flag != "" {
			fmt.Fprintf(tw, "  --%s %s\t%s\n", s.flag, s.arg, "sets "+s.env)
		}
	}
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush()
	printSettings(w, settingsFor(c.scope), c.defaults)
}

// parseArgs parses flags anywhere among the arguments (`import FILE
// --log-level debug` as well as `import --log-level debug FILE`) and
// returns the positional ones. After "--" everything is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// runCommand parses args for c, loads the configuration c reads (.env,
// the environment, the flags) and runs it.
func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	overrides := map[string]string{}
	fs, runCmd := c.flagSet(overrides)
	positional, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp(stdout, fs)
		return 0
	}
	if err != nil {
		return c.usageError(stderr, err.Error())
	}
	if len(positional) > c.nargs {
		return c.usageError(stderr, fmt.Sprintf("unexpected argument %q", positional[c.nargs]))
	}
	if len(positional) < c.nargs {
		return c.usageError(stderr, "missing "+c.synopsis)
	}
	x := &invocation{cmd: c, args: positional, stdout: stdout, stderr: stderr, log: slog.New(slog.NewTextHandler(stderr, nil))}
	if c.scope == scopeNone {
		return runCmd(context.Background(), x)
	}
	if err := loadDotEnv(".env"); err != nil {
		fmt.Fprintf(stderr, "appview: .env: %v\n", err)
		return 1
	}
	for name, v := range c.defaults { // as if given by flag: the claim command names them too
		if _, set := overrides[name]; !set && os.Getenv(name) == "" {
			overrides[name] = v
		}
	}
	getenv := func(name string) string {
		if v, ok := overrides[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
	if x.log, err = newLogger(getenv, stderr); err != nil {
		fmt.Fprintf(stderr, "appview: %v\n", err)
		return 1
	}
	if x.cfg, err = configFromEnv(getenv); err != nil {
		fmt.Fprintf(stderr, "appview: configuration: %v\n", err)
		return 1
	}
	x.cfg.Logger = x.log
	x.cfg.Security.ClaimCommand = claimCommand(program(os.Args[0], fileExists), overrides)
	ctx, stop := signalContext()
	defer stop()
	return runCmd(ctx, x)
}

// groupCommands returns the commands of the group name: the multi-word
// commands whose first word is name ("admin", "records").
func groupCommands(name string) []*command {
	var out []*command
	for _, c := range commands() {
		if first, _, ok := strings.Cut(c.name, " "); ok && first == name {
			out = append(out, c)
		}
	}
	return out
}

// printCommands writes a command table: the usage of each and its
// summary, then the extra rows (usage, summary pairs).
func printCommands(w io.Writer, cmds []*command, extra ...string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimPrefix(c.usageLine(), "usage: appview "), c.summary)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		fmt.Fprintf(tw, "  %s\t%s\n", extra[i], extra[i+1])
	}
	tw.Flush()
}

// overview is what `appview help` prints.
func overview(w io.Writer) {
	fmt.Fprint(w, "Lexview, a lexicon-driven atproto AppView.\n\nusage: appview <command> [flags] [arguments]\n\nCommands:\n")
	printCommands(w, commands(), "help [COMMAND]", "show this overview, or the command's help")
	fmt.Fprint(w, "\n"+
		"Run 'appview <command> --help' for its flags and the environment variables\n"+
		"it reads. Configuration comes from the environment and a .env file in the\n"+
		"working directory; flags override both. See docs/configuration.md.\n")
}

// groupHelp writes the help of a group of commands ("admin").
func groupHelp(w io.Writer, name string, cmds []*command) {
	fmt.Fprintf(w, "usage: appview %s <command> [flags]\n\nCommands:\n", name)
	printCommands(w, cmds)
	fmt.Fprintf(w, "\nRun 'appview %s <command> --help' for its flags and environment variables.\n", name)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return slices.Contains([]string{"-h", "-help", "--help", "help"}, arg)
}
