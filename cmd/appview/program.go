package main

import (
	"os"
	"path/filepath"
	"strings"
)

// program is how this binary was run, as its user would type it again:
// `go run ./cmd/appview` when `go run` built it, else its first argument
// as given (`appview` found on PATH, `./appview`, a full path).
func program(arg0 string, exists func(path string) bool) string {
	if !builtByGoRun(arg0) {
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

// builtByGoRun reports whether the binary at arg0 is one `go run` built:
// it lives in the go command's temporary build directory
// (.../go-build123/b001/exe/appview) or, from the second run on (Go 1.24
// caches what `go run` links), in its build cache
// ($GOCACHE/2f/2fede1...-d/appview: a directory named by the build's
// SHA-256, in hexadecimal, under one named by its first byte).
func builtByGoRun(arg0 string) bool {
	dir := filepath.Dir(arg0)
	if d := filepath.ToSlash(dir); strings.Contains(d, "/go-build") && strings.HasSuffix(d, "/exe") {
		return true
	}
	hash, ok := strings.CutSuffix(filepath.Base(dir), "-d")
	return ok && len(hash) == 64 && isHex(hash) && filepath.Base(filepath.Dir(dir)) == hash[:2]
}

// isHex reports whether s holds only lowercase hexadecimal digits.
func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
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
