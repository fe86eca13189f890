package luascript

import "github.com/yuin/gopher-lua/ast"

// concatKey is the name under which the guarded concatenation is stored in
// the VM's own string library table. Scripts reach that table only through
// the string metatable, which is protected, and the name is not a Lua
// identifier.
const concatKey = "\x00concat"

// rewriteConcat replaces every `a .. b` in chunk with a call of the guarded
// concatenation, `("")["\0concat"](a, b)`, so that string growth is
// checked against the limits at the place it happens: gopher-lua's own
// concatenation cannot be hooked.
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
		call := &ast.FuncCallExpr{
			Func: &ast.AttrGetExpr{Object: &ast.StringExpr{Value: ""}, Key: &ast.StringExpr{Value: concatKey}},
			Args: []ast.Expr{rwExpr(x.Lhs), rwExpr(x.Rhs)},
		}
		// One value, as the operator yields.
		call.AdjustRet = true
		call.SetLine(x.Line())
		call.SetLastLine(x.LastLine())
		for _, sub := range []ast.Expr{call.Func, call.Func.(*ast.AttrGetExpr).Object, call.Func.(*ast.AttrGetExpr).Key} {
			sub.SetLine(x.Line())
			sub.SetLastLine(x.LastLine())
		}
		return call
	case *ast.AttrGetExpr:
		x.Object = rwExpr(x.Object)
		x.Key = rwExpr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			f.Key = rwExpr(f.Key)
			f.Value = rwExpr(f.Value)
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
