package luascript

import "github.com/yuin/gopher-lua/ast"

// concatKey is the name under which the guarded concatenation is stored in
// the VM's own string library table. Scripts reach that table only through
// the string metatable, which is protected, and the name is not a Lua
// identifier.
const concatKey = "\x00concat"

// valuesKey is the name of the guard of table constructors (vm.values),
// stored beside the concatenation.
const valuesKey = "\x00values"

// rewriteConcat replaces every `a .. b` in chunk with a call of the guarded
// concatenation, `("")["\0concat"](a, b)`, so that string growth is
// checked against the limits at the place it happens: gopher-lua's own
// concatenation cannot be hooked. For the same reason the last field of a
// table constructor, when it is a call or `...` and so may bring any
// number of values ({...}, {f()}), is passed through the guard that
// charges them: `{("")["\0values"](...)}`.
func rewriteConcat(chunk []ast.Stmt) {
	for _, s := range chunk {
		rwStmt(s)
	}
}

func rwStmts(ss []ast.Stmt) {
	for _, s := range ss {
		rwStmt(s)
	}
}

func rwExprs(es []ast.Expr) {
	for i := range es {
		es[i] = rwExpr(es[i])
	}
}

func rwStmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		rwExprs(s.Lhs)
		rwExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		rwExprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = rwExpr(s.Expr)
	case *ast.DoBlockStmt:
		rwStmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = rwExpr(s.Condition)
		rwStmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = rwExpr(s.Condition)
		rwStmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = rwExpr(s.Condition)
		rwStmts(s.Then)
		rwStmts(s.Else)
	case *ast.NumberForStmt:
		s.Init = rwExpr(s.Init)
		s.Limit = rwExpr(s.Limit)
		s.Step = rwExpr(s.Step)
		rwStmts(s.Stmts)
	case *ast.GenericForStmt:
		rwExprs(s.Exprs)
		rwStmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			s.Name.Func = rwExpr(s.Name.Func)
			s.Name.Receiver = rwExpr(s.Name.Receiver)
		}
		rwExpr(s.Func)
	case *ast.ReturnStmt:
		rwExprs(s.Exprs)
	}
}

func rwExpr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case *ast.StringConcatOpExpr:
		// One value, as the operator yields.
		return guardCall(x, concatKey, true, rwExpr(x.Lhs), rwExpr(x.Rhs))
	case *ast.AttrGetExpr:
		x.Object = rwExpr(x.Object)
		x.Key = rwExpr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			f.Key = rwExpr(f.Key)
			f.Value = rwExpr(f.Value)
		}
		if n := len(x.Fields); n > 0 {
			if last := x.Fields[n-1]; last.Key == nil && multiValued(last.Value) {
				last.Value = guardCall(last.Value, valuesKey, false, last.Value)
			}
		}
	case *ast.FuncCallExpr:
		x.Func = rwExpr(x.Func)
		x.Receiver = rwExpr(x.Receiver)
		rwExprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs = rwExpr(x.Lhs)
		x.Rhs = rwExpr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs = rwExpr(x.Lhs)
		x.Rhs = rwExpr(x.Rhs)
	case *ast.ArithmeticOpExpr:
		x.Lhs = rwExpr(x.Lhs)
		x.Rhs = rwExpr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = rwExpr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = rwExpr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = rwExpr(x.Expr)
	case *ast.FunctionExpr:
		rwStmts(x.Stmts)
	}
	return e
}

// guardCall is a call of the guard stored under key in the string
// library, `("")[key](args...)`, placed at the lines of at; adjust makes
// it yield one value.
func guardCall(at ast.Expr, key string, adjust bool, args ...ast.Expr) *ast.FuncCallExpr {
	get := &ast.AttrGetExpr{Object: &ast.StringExpr{Value: ""}, Key: &ast.StringExpr{Value: key}}
	call := &ast.FuncCallExpr{Func: get, Args: args, AdjustRet: adjust}
	for _, e := range []ast.Expr{call, get, get.Object, get.Key} {
		e.SetLine(at.Line())
		e.SetLastLine(at.LastLine())
	}
	return call
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
