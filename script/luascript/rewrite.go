package luascript

import (
	"math"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// Compile-time rewriting.
//
// What gopher-lua does inside one instruction cannot be hooked, so the
// rewriter turns the operations that can make memory in proportion to
// their operands into calls of Go guards that charge it first:
//
//   - every `a .. b` becomes a call of the guarded concatenation
//     (vm.concat), so string growth is checked where it happens;
//   - the last field of a table constructor, when it is a call or `...`
//     and so may bring any number of values ({...}, {f()}), is passed
//     through vm.values, which charges them;
//   - an index assignment whose key is computed, `t[k] = v` (alone, in a
//     multiple assignment, or on a compound target such as t.a[k] or
//     f()[k]), becomes a call of vm.assign, which charges the gap a store
//     past the end of an array part opens (tables.go) and then stores
//     with the VM's semantics;
//   - a computed key of a table constructor, {[k] = v}, is passed through
//     vm.constructorKey, which charges that gap for the new table.
//
// The guards live in the VM's own string library table under keys that
// are not Lua identifiers (scripts reach that table only through the
// string metatable, which is protected). A rewritten chunk starts by
// copying the guards it uses into locals, whose names are not Lua
// identifiers either, so no script can name, shadow or replace them; a
// guard then costs one instruction to reach (a MOVE or GETUPVAL) besides
// the moves of its arguments and the CALL.

// guard is one of the functions the rewriter calls.
type guard int

const (
	guardConcat guard = iota
	guardValues
	guardAssign
	guardKey
	numGuards
)

// Keys of the guards in the string library table, and the names of the
// locals a chunk keeps them in.
const (
	concatKey = "\x00concat"
	valuesKey = "\x00values"
	assignKey = "\x00assign"
	keyKey    = "\x00key"
)

var guardNames = [numGuards]struct{ key, local string }{
	guardConcat: {concatKey, "lexview.concat"},
	guardValues: {valuesKey, "lexview.values"},
	guardAssign: {assignKey, "lexview.assign"},
	guardKey:    {keyKey, "lexview.key"},
}

// maxConstIndex is the largest integer literal a store may use as a key
// without the guard: gopher-lua's first array part has 32 slots
// (defaultArrayCap), so t[32] = v on any table grows its array by no more
// than t[1] = v does on a new one.
const maxConstIndex = 32

// rewriter rewrites one chunk and remembers which guards it called.
type rewriter struct {
	used [numGuards]bool
}

// rewrite rewrites chunk (see above) and returns it with the prologue
// that copies the guards it calls into locals.
func rewrite(chunk []ast.Stmt) []ast.Stmt {
	var r rewriter
	r.stmts(chunk)
	prologue := &ast.LocalAssignStmt{}
	for g, used := range r.used {
		if !used {
			continue
		}
		get := &ast.AttrGetExpr{Object: &ast.StringExpr{Value: ""}, Key: &ast.StringExpr{Value: guardNames[g].key}}
		setLines(0, 0, get, get.Object, get.Key)
		prologue.Names = append(prologue.Names, guardNames[g].local)
		prologue.Exprs = append(prologue.Exprs, get)
	}
	if len(prologue.Names) == 0 {
		return chunk
	}
	return append([]ast.Stmt{prologue}, chunk...)
}

func (r *rewriter) stmts(ss []ast.Stmt) {
	for i, s := range ss {
		ss[i] = r.stmt(s)
	}
}

func (r *rewriter) exprs(es []ast.Expr) {
	for i := range es {
		es[i] = r.expr(es[i])
	}
}

func (r *rewriter) stmt(s ast.Stmt) ast.Stmt {
	switch s := s.(type) {
	case *ast.AssignStmt:
		return r.assign(s)
	case *ast.LocalAssignStmt:
		r.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = r.expr(s.Expr)
	case *ast.DoBlockStmt:
		r.stmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Then)
		r.stmts(s.Else)
	case *ast.NumberForStmt:
		s.Init = r.expr(s.Init)
		s.Limit = r.expr(s.Limit)
		s.Step = r.expr(s.Step)
		r.stmts(s.Stmts)
	case *ast.GenericForStmt:
		r.exprs(s.Exprs)
		r.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		// The name is a dotted path (function a.b.c:m()): its keys are
		// strings, so the assignment needs no guard.
		if s.Name != nil {
			s.Name.Func = r.expr(s.Name.Func)
			s.Name.Receiver = r.expr(s.Name.Receiver)
		}
		r.expr(s.Func)
	case *ast.ReturnStmt:
		r.exprs(s.Exprs)
	}
	return s
}

func (r *rewriter) expr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case *ast.StringConcatOpExpr:
		// One value, as the operator yields.
		return r.call(x, guardConcat, true, r.expr(x.Lhs), r.expr(x.Rhs))
	case *ast.AttrGetExpr:
		x.Object = r.expr(x.Object)
		x.Key = r.expr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			f.Key = r.expr(f.Key)
			f.Value = r.expr(f.Value)
			if f.Key != nil && guardedKey(f.Key) {
				f.Key = r.call(f.Key, guardKey, true, f.Key)
			}
		}
		if n := len(x.Fields); n > 0 {
			if last := x.Fields[n-1]; last.Key == nil && multiValued(last.Value) {
				last.Value = r.call(last.Value, guardValues, false, last.Value)
			}
		}
	case *ast.FuncCallExpr:
		x.Func = r.expr(x.Func)
		x.Receiver = r.expr(x.Receiver)
		r.exprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs = r.expr(x.Lhs)
		x.Rhs = r.expr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs = r.expr(x.Lhs)
		x.Rhs = r.expr(x.Rhs)
	case *ast.ArithmeticOpExpr:
		x.Lhs = r.expr(x.Lhs)
		x.Rhs = r.expr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.FunctionExpr:
		r.stmts(x.Stmts)
	}
	return e
}

// assign rewrites an assignment with a guarded target (see the top of
// the file); any other assignment is returned with its expressions
// rewritten.
func (r *rewriter) assign(s *ast.AssignStmt) ast.Stmt {
	guarded := false
	for _, lhs := range s.Lhs {
		if x, ok := lhs.(*ast.AttrGetExpr); ok {
			x.Object = r.expr(x.Object)
			x.Key = r.expr(x.Key)
			guarded = guarded || guardedKey(x.Key)
		}
	}
	r.exprs(s.Rhs)
	switch {
	case !guarded:
		return s
	case len(s.Lhs) == 1 && len(s.Rhs) == 1:
		// t[k] = v: assign(t, k, v), which evaluates t, k and v in the
		// order the VM does.
		x := s.Lhs[0].(*ast.AttrGetExpr)
		return r.callStmt(s, guardAssign, x.Object, x.Key, oneValue(s.Rhs[0]))
	}
	return r.multiAssign(s)
}

// multiAssign rewrites a multiple assignment with a guarded target,
// `a[i], x, b.c = e1, e2, e3`, into
//
//	do
//	  local t1, k1, t2, v1, v2, v3 = a, i, b, e1, e2, e3
//	  t2.c = v3  x = v2  assign(t1, k1, v1)
//	end
//
// As Lua specifies and the VM does, the targets' tables and keys, then
// the values, are all evaluated before anything is stored (so
// `i, a[i] = i + 1, 20` stores into the old a[i]), the value list is
// adjusted to the targets (its last call or `...` filling the rest,
// extra values evaluated and dropped), and the stores run from the last
// target to the first.
func (r *rewriter) multiAssign(s *ast.AssignStmt) ast.Stmt {
	local := &ast.LocalAssignStmt{}
	temp := func(e ast.Expr) *ast.IdentExpr {
		name := "lexview.t" + strconv.Itoa(len(local.Names)+1)
		local.Names = append(local.Names, name)
		local.Exprs = append(local.Exprs, e)
		return ident(s, name)
	}
	type target struct {
		name     *ast.IdentExpr // a variable, or
		obj, key ast.Expr       // a table and key
	}
	targets := make([]target, len(s.Lhs))
	for i, lhs := range s.Lhs {
		switch x := lhs.(type) {
		case *ast.IdentExpr:
			targets[i].name = x
		case *ast.AttrGetExpr:
			targets[i].obj, targets[i].key = temp(x.Object), x.Key
			if !constant(x.Key) {
				targets[i].key = temp(x.Key)
			}
		}
	}
	values := make([]string, len(s.Lhs))
	for i := range values {
		values[i] = "lexview.v" + strconv.Itoa(i+1)
	}
	local.Names = append(local.Names, values...)
	local.Exprs = append(local.Exprs, s.Rhs...)
	body := []ast.Stmt{local}
	for i := len(targets) - 1; i >= 0; i-- {
		t, val := targets[i], ident(s, values[i])
		var store ast.Stmt
		switch {
		case t.name != nil:
			store = &ast.AssignStmt{Lhs: []ast.Expr{t.name}, Rhs: []ast.Expr{val}}
		case guardedKey(t.key): // a temporary, or a large literal
			store = r.callStmt(s, guardAssign, t.obj, t.key, val)
		default:
			get := &ast.AttrGetExpr{Object: t.obj, Key: t.key}
			setLines(s.Line(), s.LastLine(), get)
			store = &ast.AssignStmt{Lhs: []ast.Expr{get}, Rhs: []ast.Expr{val}}
		}
		setLines(s.Line(), s.LastLine(), store)
		body = append(body, store)
	}
	block := &ast.DoBlockStmt{Stmts: body}
	setLines(s.Line(), s.LastLine(), local, block)
	return block
}

// call is a call of guard g placed at the lines of at; adjust makes it
// yield one value.
func (r *rewriter) call(at ast.PositionHolder, g guard, adjust bool, args ...ast.Expr) *ast.FuncCallExpr {
	r.used[g] = true
	fn := ident(at, guardNames[g].local)
	call := &ast.FuncCallExpr{Func: fn, Args: args, AdjustRet: adjust}
	setLines(at.Line(), at.LastLine(), call)
	return call
}

// callStmt is the statement calling guard g, at the lines of at.
func (r *rewriter) callStmt(at ast.PositionHolder, g guard, args ...ast.Expr) *ast.FuncCallStmt {
	s := &ast.FuncCallStmt{Expr: r.call(at, g, false, args...)}
	setLines(at.Line(), at.LastLine(), s)
	return s
}

// ident is a reference to the variable name, at the lines of at.
func ident(at ast.PositionHolder, name string) *ast.IdentExpr {
	e := &ast.IdentExpr{Value: name}
	setLines(at.Line(), at.LastLine(), e)
	return e
}

func setLines(line, last int, nodes ...ast.PositionHolder) {
	for _, n := range nodes {
		n.SetLine(line)
		n.SetLastLine(last)
	}
}

// oneValue adjusts e, the value of an assignment, to one value, as the
// assignment does: a call or `...` is put in parentheses.
func oneValue(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		x.AdjustRet = true
	case *ast.Comma3Expr:
		x.AdjustRet = true
	}
	return e
}

// multiValued reports whether e, as the last expression of a list, brings
// all of its values: a call or `...` not in parentheses.
func multiValued(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		return !x.AdjustRet
	case *ast.Comma3Expr:
		return !x.AdjustRet
	}
	return false
}

// constant reports whether e is a literal that is not a table.
func constant(e ast.Expr) bool {
	switch e.(type) {
	case *ast.StringExpr, *ast.NumberExpr, *ast.NilExpr, *ast.TrueExpr, *ast.FalseExpr:
		return true
	}
	return false
}

// guardedKey reports whether a store with key e needs the guard: any key
// but a literal string, boolean or nil, or a number that is not an integer
// above maxConstIndex.
func guardedKey(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.StringExpr, *ast.NilExpr, *ast.TrueExpr, *ast.FalseExpr:
		return false
	case *ast.NumberExpr:
		f, ok := parseNumber(x.Value)
		return !ok || f > maxConstIndex && f == math.Trunc(f)
	}
	return true
}

// parseNumber reads a Lua number literal as gopher-lua's compiler does.
func parseNumber(s string) (float64, bool) {
	s = strings.Trim(s, " \t\n")
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return float64(n), true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
