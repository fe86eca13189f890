// Command appview runs a Lexview instance.
//
//	appview serve [flags]                 run migrations, then serve HTTP until SIGINT/SIGTERM
//	                                      (--app DIR: apply an app folder and each change of it)
//	appview dev [flags] DIR               serve an app folder for its developer, applying each saved change
//	appview migrate [flags]               apply pending migrations and exit
//	appview records import [flags] FILE   store records from a JSON-lines file
//	appview apply [flags] DIR             make the instance's definition that of an app folder
//	appview export [flags] DIR            write the instance's definition as an app folder
//	appview test [flags] DIR              run an app folder's tests on throwaway instances
//	appview admin bootstrap [flags] --did DID [--force-new-key]
//	                                      make DID the super user and print an admin API key
//	appview version                       print the version
//	appview help [COMMAND]                the overview, or a command's help
//
// Configuration comes from the environment (and a .env file in the working
// directory); the common settings also have flags, which win. Every
// command prints its flags and the environment variables it reads with
// --help; see docs/configuration.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lexview/lexview/appview"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status: 0 on
// success (and for help), 1 when the command failed, 2 for a misuse of the
// command line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		overview(stderr)
		return 2
	}
	switch {
	case args[0] == "--version" || args[0] == "-v":
		args = append([]string{"version"}, args[1:]...)
	case args[0] == "help" && len(args) > 1:
		// `appview help admin bootstrap` is `appview admin bootstrap --help`.
		return run(append(args[1:len(args):len(args)], "--help"), stdout, stderr)
	case isHelp(args[0]):
		overview(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return runCommand(c, args[1:], stdout, stderr)
		}
	}
	group := groupCommands(args[0])
	if len(group) == 0 {
		fmt.Fprintf(stderr, "appview: unknown command %q\nRun 'appview help' for the list of commands.\n", args[0])
		return 2
	}
	switch {
	case len(args) == 1:
		fmt.Fprintf(stderr, "appview %s: missing command\n", args[0])
		groupHelp(stderr, args[0], group)
		return 2
	case isHelp(args[1]):
		groupHelp(stdout, args[0], group)
		return 0
	}
	for _, c := range group {
		if c.name == args[0]+" "+args[1] {
			return runCommand(c, args[2:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "appview %s: unknown command %q\n", args[0], args[1])
	groupHelp(stderr, args[0], group)
	return 2
}

// signalContext is canceled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func versionCommand() *command {
	return &command{
		name: "version", summary: "print the version", about: "Prints the version of Lexview.",
		define: func(*flag.FlagSet) func(context.Context, *invocation) int {
			return func(_ context.Context, x *invocation) int {
				fmt.Fprintf(x.stdout, "lexview %s\n", appview.Version)
				return 0
			}
		},
	}
}
