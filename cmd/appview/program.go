package main

import (
	"os"
	"path/filepath"
	"strings"
)

// program is how this binary was run, as its user would type it again:
// `go run ./cmd/appview` when `go run` built it (the binary lives in the
// go command's temporary build directory), else its first argument as
// given (`appview` found on PATH, `./appview`, a full path).
func program(arg0 string, exists func(path string) bool) string {
	dir := filepath.ToSlash(filepath.Dir(arg0))
	if !strings.Contains(dir, "/go-build") || !strings.HasSuffix(dir, "/exe") {
		return shellQuote(arg0)
	}
	switch {
	case exists(filepath.Join("cmd", "appview")):
		return "go run ./cmd/appview"
	case exists("main.go") && filepath.Base(workingDir()) == "appview":
		return "go run ."
	}
	return "go run " + packagePath
}

// packagePath is this command's package.
const packagePath = "github.com/lexview/lexview/cmd/appview"

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func workingDir() string {
	wd, _ := os.Getwd()
	return wd
}

// claimCommand is the command that claims a fresh instance for the
// start-up warning: prog's `admin bootstrap`, with the database flag the
// command was given (the environment and .env it shares anyway).
func claimCommand(prog string, overrides map[string]string) string {
	cmd := prog + " admin bootstrap"
	if v, ok := overrides["DATABASE_URL"]; ok {
		cmd += " --database-url " + shellQuote(v)
	}
	return cmd + " --did <your DID>"
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:@%+=,.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
