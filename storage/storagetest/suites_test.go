package storagetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestRunAllCoversEverySuite: every exported Run* function of the package
// that runs on a store opener (func(testing.TB) storage.Store) is one of
// Suites, so RunAll cannot miss a suite added later. RunMigrations takes
// unmigrated stores and is run on its own.
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
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Run") || fn.Name.Name == "RunAll" || !fn.Name.IsExported() {
				continue
			}
			params := string(src[fset.Position(fn.Type.Params.Pos()).Offset:fset.Position(fn.Type.Params.End()).Offset])
			if strings.HasSuffix(params, "storage.Store)") {
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
