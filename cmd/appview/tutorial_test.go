package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tutorialFile is the tutorial TestTutorial runs.
const tutorialFile = "../../docs/tutorial.md"

// TestTutorial runs docs/tutorial.md as its reader would, with the binary
// built from this tree on PATH as `appview`: it saves the files the
// tutorial shows, runs its commands, starts its servers and compares what
// they print with what the tutorial shows. The tutorial marks its fenced
// blocks by their info string:
//
//	```LANG file=PATH   a file the reader saves: written at PATH, relative
//	                    to the shell's working directory
//	```sh run           commands the reader types in their terminal:
//	                    sourced by one bash session (-e, -o pipefail), so
//	                    that its working directory and variables (exported
//	                    or not) carry over to the next block; a command
//	                    that fails fails the test
//	```sh start=NAME    a command that keeps running in a terminal of its
//	                    own (a server): started in the session's working
//	                    directory with a new terminal's environment (none
//	                    of the session's variables), and stopped when the
//	                    test ends. Its address,
//	                    127.0.0.1:PORT with the PORT of its --port or 3000,
//	                    becomes the one it bound (it runs with PORT=0 and
//	                    --port 0) in every later block
//	```text output      all that the run block just before it printed on
//	                    stdout
//	```text output=NAME all that the server NAME prints on stdout next,
//	                    until the tutorial shows more of it (the test waits
//	                    for it)
//
// In an output, a line "..." stands for any lines, "..." within a line
// for any text, and a time of day (14:02:11) for any time. A run block
// that prints must be followed by its output. Other blocks are for
// reading only (the install step, examples). The session is offline: it
// has the environment of serveEnv (no event stream, PLC and relay URLs
// that refuse connections).
func TestTutorial(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the tutorial needs %s (CI runs it): %v", tool, err)
			}
			t.Skipf("the tutorial needs %s: %v", tool, err)
		}
	}
	raw, err := os.ReadFile(tutorialFile)
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(string(raw))
	s := newTutorialSession(t, binary(t))
	var commands strings.Builder
	for i, b := range blocks {
		switch {
		case b.attr("file") != "":
			s.save(b.attr("file"), b.body)
		case b.lang == "sh" && b.has("run"):
			commands.WriteString(b.body)
			var want *fencedBlock
			if i+1 < len(blocks) && blocks[i+1].lang == "text" && blocks[i+1].has("output") && blocks[i+1].attr("output") == "" {
				want = &blocks[i+1]
			}
			s.run(b, want)
		case b.lang == "sh" && b.attr("start") != "":
			commands.WriteString(b.body)
			s.start(b.attr("start"), b.body)
		case b.lang == "text" && b.attr("output") != "":
			s.expectNext(b.attr("output"), b)
		case b.lang == "text" && b.has("output") && (i == 0 || !blocks[i-1].has("run")):
			t.Fatalf("docs/tutorial.md:%d: an output that follows no run block", b.line)
		}
	}
	// The tutorial does what it promises: a test that finds none of its
	// commands has nothing to check.
	for _, want := range []string{"appview dev app", "appview test app", "appview codegen --lang ts", "appview codegen --lang go",
		"appview records import", "appview apply --url", "appview export --url"} {
		if !strings.Contains(commands.String(), want) {
			t.Errorf("the tutorial runs no %q", want)
		}
	}
}

// fencedBlock is a fenced code block of a Markdown file.
type fencedBlock struct {
	line  int      // where it opens, from 1
	lang  string   // the info string's first word
	attrs []string // its other words: "run", "file=PATH"
	body  string
}

// attr returns the value of the attribute name=value, or "".
func (b fencedBlock) attr(name string) string {
	for _, a := range b.attrs {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// has reports whether the block has the attribute name, with or without
// a value.
func (b fencedBlock) has(name string) bool {
	return slices.ContainsFunc(b.attrs, func(a string) bool { return a == name || strings.HasPrefix(a, name+"=") })
}

// fencedBlocks returns the ``` blocks of doc that open at the start of a
// line, in order.
func fencedBlocks(doc string) []fencedBlock {
	var out []fencedBlock
	var cur *fencedBlock
	for n, line := range strings.Split(doc, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			words := strings.Fields(strings.TrimPrefix(line, "```"))
			cur = &fencedBlock{line: n + 1}
			if len(words) > 0 {
				cur.lang, cur.attrs = words[0], words[1:]
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	return out
}

// tutorialSession is the reader's terminal: one bash process, in which
// each run block is sourced, so that its working directory and variables
// (exported or not) carry over as they do for the reader; the servers
// started, each in a terminal of its own; and the addresses the tutorial
// names mapped to the ones bound.
type tutorialSession struct {
	t       *testing.T
	env     []string // the environment of a new terminal
	shell   io.WriteCloser
	replies <-chan string // the shell's "done DIR" after each block
	state   string        // the blocks' scripts and what they print
	cwd     string        // the shell's working directory
	blocks  int
	addrs   map[string]string // 127.0.0.1:3000 -> 127.0.0.1:41234
	servers map[string]*tutorialServer
}

// tutorialServer is a started command's standard output, and how far the
// tutorial has read it.
type tutorialServer struct {
	out  syncBuffer
	read int
}

func newTutorialSession(t *testing.T, bin string) *tutorialSession {
	s := &tutorialSession{t: t, cwd: t.TempDir(), state: t.TempDir(),
		env:   serveEnv("", "PORT=0", "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH")),
		addrs: map[string]string{}, servers: map[string]*tutorialServer{}}
	shell := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail")
	shell.Dir, shell.Env, shell.Stderr = s.cwd, s.env, os.Stderr
	in, err := shell.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := shell.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	replies := make(chan string)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			replies <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		shell.Process.Kill()
		shell.Wait()
	})
	s.shell, s.replies = in, replies
	return s
}

// resolve returns text with the tutorial's addresses replaced by the
// ones bound.
func (s *tutorialSession) resolve(text string) string {
	for from, to := range s.addrs {
		text = strings.ReplaceAll(text, from, to)
	}
	return text
}

func (s *tutorialSession) save(path, content string) {
	s.t.Helper()
	writeFile(s.t, filepath.Join(s.cwd, path), s.resolve(content))
}

// run runs the commands of b in the shell and compares what they print
// with want (nil when the tutorial shows nothing: then they must print
// nothing). A command that fails ends the shell (-e), and the test.
func (s *tutorialSession) run(b fencedBlock, want *fencedBlock) {
	s.t.Helper()
	s.blocks++
	script, stdout, stderr := s.stateFile("%d.sh"), s.stateFile("%d.out"), s.stateFile("%d.err")
	writeFile(s.t, script, s.resolve(b.body))
	fmt.Fprintf(s.shell, "source '%s' >'%s' 2>'%s'\necho \"done $PWD\"\n", script, stdout, stderr)
	var reply string
	select {
	case reply = <-s.replies:
	case <-time.After(time.Minute):
	}
	read := func(file string) string {
		raw, _ := os.ReadFile(file)
		return string(raw)
	}
	cwd, ok := strings.CutPrefix(reply, "done ")
	if !ok {
		s.t.Fatalf("docs/tutorial.md:%d failed:\n%s\nstdout:\n%s\nstderr:\n%s", b.line, b.body, read(stdout), read(stderr))
	}
	s.cwd = cwd
	got := read(stdout)
	if got != "" && !strings.HasSuffix(got, "\n") {
		got += "\n"
	}
	switch {
	case want == nil && got != "":
		s.t.Fatalf("docs/tutorial.md:%d printed what the tutorial does not show:\n%s", b.line, got)
	case want != nil && !outputPattern(s.resolve(want.body), true).MatchString(withTimes(got)):
		s.t.Fatalf("docs/tutorial.md:%d printed\n%s\nnot the output of line %d:\n%s\nstderr:\n%s", b.line, got, want.line, want.body, read(stderr))
	}
}

// stateFile is the path of the current block's file named by format.
func (s *tutorialSession) stateFile(format string) string {
	return filepath.Join(s.state, fmt.Sprintf(format, s.blocks))
}

// start starts the server name with the command of body, waits for it to
// listen and maps its address.
func (s *tutorialSession) start(name, body string) {
	s.t.Helper()
	port := "3000"
	if m := regexp.MustCompile(`--port (\d+)`).FindStringSubmatch(body); m != nil {
		port = m[1]
	}
	command := strings.ReplaceAll(s.resolve(body), "--port "+port, "--port 0")
	cmd := exec.Command("bash", "-c", command) // in a new terminal: none of the session's variables
	srv := &tutorialServer{}
	cmd.Dir, cmd.Env, cmd.Stdout = s.cwd, s.env, &srv.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stopped with the shell
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	addr, _ := listening(s.t, stderr)
	s.addrs["127.0.0.1:"+port] = strings.TrimPrefix(addr, "http://")
	s.servers[name] = srv
}

// expectNext waits until the server name has printed the output of b
// right after what the tutorial showed of it before.
func (s *tutorialSession) expectNext(name string, b fencedBlock) {
	s.t.Helper()
	srv := s.servers[name]
	if srv == nil {
		s.t.Fatalf("docs/tutorial.md:%d: the output of %s, which no block started", b.line, name)
	}
	re := outputPattern(s.resolve(b.body), false)
	deadline := time.Now().Add(20 * time.Second)
	for {
		printed := withTimes(srv.out.String())
		if m := re.FindStringIndex(printed[srv.read:]); m != nil {
			srv.read += m[1]
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("docs/tutorial.md:%d: %s printed\n%s\nnot, after what the tutorial showed before:\n%s", b.line, name, printed, b.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// timeOfDay is a time as the dev command prints it.
var timeOfDay = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)

// withTimes returns text with its times of day replaced by "hh:mm:ss".
func withTimes(text string) string {
	return timeOfDay.ReplaceAllString(text, "hh:mm:ss")
}

// outputPattern is the regular expression of an output the tutorial
// shows: what is printed from where the tutorial last looked, up to the
// end when all.
func outputPattern(shown string, all bool) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`\A`)
	for _, line := range strings.Split(strings.TrimSuffix(withTimes(shown), "\n"), "\n") {
		if strings.TrimSpace(line) == "..." {
			b.WriteString(`(?:.*\n)*?`)
			continue
		}
		parts := strings.Split(line, "...")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		fmt.Fprintf(&b, `%s\n`, strings.Join(parts, `.*?`))
	}
	if all {
		b.WriteString(`\z`)
	}
	return regexp.MustCompile(b.String())
}

// TestTutorialConventions checks the reading of the tutorial: its blocks
// and attributes, and the outputs' wildcards.
func TestTutorialConventions(t *testing.T) {
	t.Parallel()
	blocks := fencedBlocks("intro\n```sh run\nls\n```\n\n    ```indented\n```json file=a/b.json\n{}\n```\n```\nplain\n```\n")
	if len(blocks) != 3 || blocks[0].lang != "sh" || !blocks[0].has("run") || blocks[0].body != "ls\n" || blocks[0].line != 2 ||
		blocks[1].attr("file") != "a/b.json" || blocks[1].has("run") || blocks[2].lang != "" || blocks[2].body != "plain\n" {
		t.Fatalf("blocks: %+v", blocks)
	}
	shown := "14:02:11 app: applied\n...\n  + index ... (value)\n"
	for printed, want := range map[string]bool{
		"09:15:00 app: applied\n  + index c tag (value)\n":                          true,
		"09:15:00 app: applied\n  warning: w\n  note: n\n  + index c tag (value)\n": true,
		"09:15:00 app: applied\n  + index c tag (text)\n":                           false,
		"09:15:00 app: applied\n  + index c tag (value)\nmore\n":                    false, // all of it is shown
		"more\n09:15:00 app: applied\n  + index c tag (value)\n":                    false,
		"app: applied\n  + index c tag (value)\n":                                   false,
	} {
		if got := outputPattern(shown, true).MatchString(withTimes(printed)); got != want {
			t.Errorf("%q matches %q: %v, want %v", shown, printed, got, want)
		}
	}
	if !outputPattern(shown, false).MatchString(withTimes("09:15:00 app: applied\n  + index c tag (value)\nmore\n")) {
		t.Error("the output of a server did not match what it printed first")
	}
}
