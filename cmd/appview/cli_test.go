package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runIn runs the command line args in a fresh working directory and
// returns the exit status, both outputs and what the command left in the
// directory.
func runIn(t *testing.T, args ...string) (code int, stdout, stderr string, files []string) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		files = append(files, e.Name())
	}
	return code, out.String(), errOut.String(), files
}

// TestHelp: --help, -h and `help COMMAND` print, on stdout with status 0,
// the command's usage, its flags and every environment variable it reads,
// and do nothing else (no database, no file named --help).
func TestHelp(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, c := range commands() {
		name := strings.Fields(c.name)
		variants := [][]string{
			append(slices.Clone(name), "--help"),
			append(slices.Clone(name), "-h"),
			append([]string{"help"}, name...),
		}
		if c.scope > scopeNone {
			variants = append(variants, append(slices.Clone(name), "--log-level", "debug", "--help")) // after other flags
		}
		for _, args := range variants {
			code, out, errOut, files := runIn(t, args...)
			if code != 0 || errOut != "" || len(files) != 0 || !strings.HasPrefix(out, "usage: appview "+c.name) {
				t.Errorf("%v: exit %d, stderr %q, files %v, stdout:\n%s", args, code, errOut, files, out)
				continue
			}
			for _, s := range settings() {
				reads := s.scope <= c.scope
				if strings.Contains(out, "  "+s.env+"  ") != reads {
					t.Errorf("%v: lists %s: %v, want %v", args, s.env, !reads, reads)
				}
				if s.flag != "" && strings.Contains(out, "--"+s.flag+" ") != reads {
					t.Errorf("%v: lists --%s: %v, want %v", args, s.flag, !reads, reads)
				}
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, errOut, _ := runIn(t, args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, c := range commands() {
			if !strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("%v: overview lacks %s:\n%s", args, c.name, out)
			}
		}
	}
	for group, args := range map[string][][]string{
		"admin":   {{"admin", "--help"}, {"help", "admin"}},
		"records": {{"records", "-h"}, {"records", "help"}},
	} {
		for _, args := range args {
			code, out, errOut, _ := runIn(t, args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: appview "+group+" <command>") {
				t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
			}
		}
	}
}

// TestUsageErrors: unknown flags, bad flag values, stray or missing
// arguments and unknown commands are reported on stderr with status 2, and
// nothing runs.
func TestUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: appview <command>"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--port", "eighty"}, `invalid value "eighty" for flag -port: "eighty" is not an integer`},
		{[]string{"serve", "--port", "70000"}, "70000 is not a port"},
		{[]string{"serve", "--log-level", "loud"}, `"loud" is not one of debug, info, warn, error`},
		{[]string{"serve", "--log-format", "xml"}, `"xml" is not text or json`},
		{[]string{"migrate", "now"}, `unexpected argument "now"`},
		{[]string{"migrate", "--port", "4000"}, "flag provided but not defined: -port"},
		{[]string{"version", "--database-url", "x"}, "flag provided but not defined"},
		{[]string{"records"}, "appview records: missing command"},
		{[]string{"records", "export"}, `unknown command "export"`},
		{[]string{"records", "import"}, "missing FILE"},
		{[]string{"records", "import", "a.jsonl", "b.jsonl"}, `unexpected argument "b.jsonl"`},
		{[]string{"records", "import", "--did", "did:plc:x", "a.jsonl"}, "flag provided but not defined: -did"},
		{[]string{"admin"}, "appview admin: missing command"},
		{[]string{"admin", "bootstrap", "--did"}, "flag needs an argument: -did"},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
	} {
		code, out, errOut, files := runIn(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || len(files) != 0 {
			t.Errorf("%v: exit %d, stdout %q, files %v, stderr:\n%s", tc.args, code, out, files, errOut)
		}
	}
}

// TestFlagsOverrideEnvironment: a flag wins over its environment variable
// and over .env, and flags may follow the positional arguments.
func TestFlagsOverrideEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("DATABASE_URL=sqlite://from-dotenv.db\n"), 0o600)
	t.Setenv("LOG_LEVEL", "loud") // refused if read
	var out, errOut bytes.Buffer
	if code := run([]string{"migrate", "--log-level", "error", "--database-url", "sqlite://from-flag.db"}, &out, &errOut); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errOut.String())
	}
	for name, want := range map[string]bool{"from-flag.db": true, "from-dotenv.db": false} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}

	os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o600)
	t.Setenv("TOKEN_ENCRYPTION_KEY", testTokenKey)
	out.Reset()
	if code := run([]string{"records", "import", "empty.jsonl", "--database-url", "sqlite://import.db", "--log-level=error", "--jetstream-url", "off"}, &out, &errOut); code != 0 ||
		out.String() != "imported 0 records\n" {
		t.Fatalf("import with trailing flags: exit %d, stdout %q, stderr %s", code, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "import.db")); err != nil {
		t.Fatalf("--database-url after FILE was not used: %v", err)
	}
}

// TestSettingsTable: the settings table, which help prints, lists exactly
// the environment variables the command reads.
func TestSettingsTable(t *testing.T) {
	t.Parallel()
	asked := map[string]bool{}
	getenv := func(k string) string { asked[k] = true; return "" }
	if _, err := configFromEnv(getenv); err != nil {
		t.Fatal(err)
	}
	if _, err := newLogger(getenv, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range settings() {
		if listed[s.env] {
			t.Errorf("%s listed twice", s.env)
		}
		listed[s.env] = true
		if !asked[s.env] {
			t.Errorf("%s is in the table but never read", s.env)
		}
	}
	for k := range asked {
		if !listed[k] {
			t.Errorf("%s is read but not in the table", k)
		}
	}
}

// TestSettingsDocumented: docs/configuration.md's table of variables has
// a row for each setting, naming its flag, and no other.
func TestSettingsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([A-Z_]+)` \\|\\s*(?:`--([a-z-]+)`)?\\s*\\|")
	documented := map[string]string{} // variable -> flag
	for line := range strings.Lines(string(doc)) {
		if m := row.FindStringSubmatch(line); m != nil {
			documented[m[1]] = m[2]
		}
	}
	for _, s := range settings() {
		flag, ok := documented[s.env]
		switch {
		case !ok:
			t.Errorf("docs/configuration.md lacks %s", s.env)
		case flag != s.flag:
			t.Errorf("docs/configuration.md gives %s the flag %q, the command %q", s.env, flag, s.flag)
		}
		delete(documented, s.env)
	}
	for env := range documented {
		t.Errorf("docs/configuration.md documents %s, which the command does not read", env)
	}
}
