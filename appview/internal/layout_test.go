// Package internal_test holds the test of the service line: services
// (service/...) and the machinery they share (core/...) never import a
// front end (web/...), the machinery never imports a service, and
// neither serves HTTP. Outbound HTTP is theirs to
// make: http.Client, http.NewRequest and the *http.Request they build
// for it are allowed.
package internal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	module  = "github.com/lexview/lexview/appview/internal/"
	web     = module + "web"
	service = module + "service"
	core    = module + "core"
)

// under reports whether the package path is dir or a package below it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// serverImports are packages whose only purpose is serving HTTP.
var serverImports = []string{"net/http/httptest", "net/http/pprof", "github.com/prometheus/client_golang/prometheus/promhttp"}

// serverNames are the names of package net/http that exist to serve
// HTTP: server types, and the functions that answer or route a request.
var serverNames = map[string]bool{
	"Handler": true, "HandlerFunc": true, "ResponseWriter": true, "ServeMux": true, "Server": true,
	"Flusher": true, "Hijacker": true, "Pusher": true, "ResponseController": true, "NewResponseController": true,
	"NewServeMux": true, "Handle": true, "HandleFunc": true, "DefaultServeMux": true,
	"ListenAndServe": true, "ListenAndServeTLS": true, "Serve": true, "ServeTLS": true,
	"Error": true, "NotFound": true, "NotFoundHandler": true, "Redirect": true, "RedirectHandler": true,
	"ServeContent": true, "ServeFile": true, "ServeFileFS": true, "FileServer": true, "FileServerFS": true,
	"StripPrefix": true, "TimeoutHandler": true, "MaxBytesReader": true, "MaxBytesHandler": true,
	"SetCookie": true, "AllowQuerySemicolons": true,
}

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Deps       []string
}

// listPackages lists the packages of the service line with their
// transitive (non-test) dependencies.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-json=ImportPath,Dir,GoFiles,Deps", "./service/...", "./core/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages under service/ and core/: the test looks in the wrong place", len(pkgs))
	}
	return pkgs
}

// TestServiceLine fails when a package under service/ or core/ depends
// (directly or through another package) on a front end under web/, a
// package under core/ on a service under service/, or either serves
// HTTP: imports a serving-only package, names a net/http server
// type or serving function, or receives an *http.Request in its API (an
// exported function or method, a named function type, an interface
// method or a struct field of function type; RoundTrip, an outbound
// http.RoundTripper, is allowed).
func TestServiceLine(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, dep := range p.Deps {
			if under(dep, web) {
				t.Errorf("%s depends on the front end %s", p.ImportPath, dep)
			}
			if under(p.ImportPath, core) && under(dep, service) {
				t.Errorf("%s (machinery) depends on the service %s", p.ImportPath, dep)
			}
		}
		for _, name := range p.GoFiles {
			for _, problem := range servesHTTP(t, filepath.Join(p.Dir, name)) {
				t.Errorf("%s: %s", strings.TrimPrefix(p.ImportPath, module), problem)
			}
		}
	}
}

// servesHTTP returns what in the Go file at path serves HTTP.
func servesHTTP(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	report := func(n ast.Node, format string, args ...any) {
		pos := fset.Position(n.Pos())
		problems = append(problems, fmt.Sprintf("%s:%d: %s", filepath.Base(pos.Filename), pos.Line, fmt.Sprintf(format, args...)))
	}
	httpName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if slices.Contains(serverImports, path) {
			report(imp, "imports %s", path)
		}
		if path == "net/http" {
			httpName = "http"
			if imp.Name != nil {
				httpName = imp.Name.Name
			}
		}
	}
	if httpName == "" {
		return problems
	}
	isHTTP := func(e ast.Expr, name string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != name {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == httpName
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isHTTP(sel, sel.Sel.Name) && serverNames[sel.Sel.Name] {
			report(sel, "uses http.%s", sel.Sel.Name)
		}
		return true
	})
	// receives reports a function type that takes an *http.Request.
	receives := func(what string, ft *ast.FuncType) {
		if ft == nil || ft.Params == nil {
			return
		}
		for _, field := range ft.Params.List {
			if star, ok := field.Type.(*ast.StarExpr); ok && isHTTP(star.X, "Request") {
				report(field, "%s receives an *http.Request", what)
			}
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && d.Name.Name != "RoundTrip" {
				receives(d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				switch typ := ts.Type.(type) {
				case *ast.FuncType:
					receives("type "+ts.Name.Name, typ)
				case *ast.InterfaceType:
					for _, m := range typ.Methods.List {
						ft, _ := m.Type.(*ast.FuncType)
						if len(m.Names) == 1 && m.Names[0].Name != "RoundTrip" {
							receives(ts.Name.Name+"."+m.Names[0].Name, ft)
						}
					}
				case *ast.StructType:
					for _, field := range typ.Fields.List {
						if ft, ok := field.Type.(*ast.FuncType); ok {
							receives(ts.Name.Name+" field", ft)
						}
					}
				}
			}
		}
	}
	return problems
}

// TestLayoutDocumented fails when a package of appview/internal has no
// line in the floor plan of docs/architecture.md, or the floor plan names
// a package that does not exist (the modules of the admin API share the
// line of `web/adminapi/*`, which names each), or a public package is
// not in the table of public packages.
func TestLayoutDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	modules := ""
	for line := range strings.Lines(string(doc)) {
		if strings.HasPrefix(line, "| `web/adminapi/*` |") {
			modules = line
		}
	}
	pkgs := map[string]bool{}
	for _, path := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(path, module)
		if !ok {
			continue // the test's own package
		}
		pkgs[rel] = true
		name, isModule := strings.CutPrefix(rel, "web/adminapi/")
		switch {
		case strings.Contains(string(doc), "`"+rel+"`"):
		case isModule && !strings.Contains(name, "/") && strings.Contains(modules, "`"+name+"`"):
		default:
			t.Errorf("%s has no line in docs/architecture.md", rel)
		}
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages: the test looks in the wrong place", len(pkgs))
	}
	// The public packages (outside any internal/, and the commands,
	// examples and scripts) are in the table of public packages.
	out, err = exec.Command("go", "list", "github.com/lexview/lexview/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, path := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(path, "github.com/lexview/lexview/")
		if strings.Contains("/"+rel+"/", "/internal/") || strings.HasPrefix(rel, "cmd/") ||
			strings.HasPrefix(rel, "examples/") || strings.HasPrefix(rel, "scripts/") {
			continue
		}
		if !strings.Contains(string(doc), "`"+rel+"`") {
			t.Errorf("the public package %s is not in the table of public packages of docs/architecture.md", rel)
		}
	}
	for _, m := range regexp.MustCompile("`((?:service|web|core|testing)/[a-z0-9/]+)`").FindAllStringSubmatch(string(doc), -1) {
		if !pkgs[m[1]] {
			t.Errorf("docs/architecture.md names %s, which is not a package", m[1])
		}
	}
}
