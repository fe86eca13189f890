package appview_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the Go snippets of docs/embedding.md from the code they show")

// snippetMarker precedes every Go block of docs/embedding.md: it names the
// file (from the module's root) and the region the block shows.
var snippetMarker = regexp.MustCompile(`^<!-- snippet: ([\w./-]+)#([\w-]+) -->$`)

// TestEmbeddingDocSnippets: every Go snippet of docs/embedding.md is,
// exactly, a region of a Go file of the module that compiles (most are
// examples that run, embedding_example_test.go), so the page's code
// compiles. -update-docs rewrites the page's snippets from their regions.
func TestEmbeddingDocSnippets(t *testing.T) {
	const page = "../docs/embedding.md"
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var out []string
	blocks := 0
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		if lines[i] != "```go" {
			continue
		}
		blocks++
		end := i + 1
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		m := snippetMarker.FindStringSubmatch(previousLine(lines, i))
		if m == nil {
			t.Errorf("%s:%d: a Go block without a `<!-- snippet: FILE#REGION -->` line before it", page, i+1)
			out = append(out, lines[i+1:end]...)
			i = end - 1
			continue
		}
		want, err := region(filepath.Join("..", m[1]), m[2])
		if err != nil {
			t.Errorf("%s:%d: %v", page, i+1, err)
			want = lines[i+1 : end]
		}
		if got := lines[i+1 : end]; strings.Join(got, "\n") != strings.Join(want, "\n") && !*updateDocs {
			t.Errorf("%s:%d: the snippet is not region %q of %s (go test -run TestEmbeddingDocSnippets -update-docs rewrites it):\n%s",
				page, i+1, m[2], m[1], lineDiff(got, want))
		}
		out = append(out, want...)
		i = end - 1
	}
	if blocks == 0 {
		t.Fatalf("%s has no Go block", page)
	}
	if *updateDocs {
		if err := os.WriteFile(page, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// previousLine is the last non-blank line before line i.
func previousLine(lines []string, i int) string {
	for i--; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}

// region returns the lines of file between "// doc-snippet: name" and
// "// doc-snippet: end", without their common indentation and trailing
// blank lines.
func region(file, name string) ([]string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var body []string
	in := false
	for _, l := range strings.Split(string(raw), "\n") {
		switch strings.TrimSpace(l) {
		case "// doc-snippet: " + name:
			in = true
			continue
		case "// doc-snippet: end":
			if in {
				for len(body) > 0 && strings.TrimSpace(body[len(body)-1]) == "" { // gofmt's blank line before a comment
					body = body[:len(body)-1]
				}
				return dedent(body), nil
			}
		}
		if in {
			body = append(body, l)
		}
	}
	return nil, fmt.Errorf("%s has no region %q (// doc-snippet: %s ... // doc-snippet: end)", file, name, name)
}

// dedent removes the tabs every non-blank line starts with.
func dedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, "\t")); common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = strings.TrimRight(l, " \t")
	}
	return out
}

// lineDiff shows the lines of got and want that differ.
func lineDiff(got, want []string) string {
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "line %d:\n  page: %q\n  code: %q\n", i+1, g, w)
		}
	}
	return b.String()
}
