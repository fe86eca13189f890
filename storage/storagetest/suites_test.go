package storagetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestRunAllCoversEverySuite: every exported Run* function of the package
// is one of Suites, so RunAll cannot miss a suite added later.
func TestRunAllCoversEverySuite(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Run") && fn.Name.Name != "RunAll" && fn.Name.IsExported() {
				declared = append(declared, fn.Name.Name)
			}
		}
	}
	var listed, names []string
	for _, s := range Suites() {
		full := runtime.FuncForPC(reflect.ValueOf(s.Run).Pointer()).Name()
		listed = append(listed, full[strings.LastIndex(full, ".")+1:])
		if slices.Contains(names, s.Name) {
			t.Errorf("suite name %q repeats", s.Name)
		}
		names = append(names, s.Name)
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Fatalf("Run* functions %v, Suites runs %v", declared, listed)
	}
}
