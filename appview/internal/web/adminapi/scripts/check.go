package scripts

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// checkFailed is the answer to a source the check refuses: the message a
// create would answer and, when the message names one, the line (and
// column) of the error, 1-based.
type checkFailed struct {
	Error  string `json:"error"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// check answers POST /admin/scripts/check {source}: 200 {ok: true} when a
// create would accept the source, else 400 with the create's message and
// the error's line. Nothing is stored or audited. Not in the
// specification: the dashboard's script editors call it.
func (h handlers) check(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	var req struct {
		Source *string `json:"source"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.Source == nil {
		return fail.New(fail.Invalid, "source is required")
	}
	err := h.svc.Check(*req.Source)
	var fe *fail.Error
	switch {
	case err == nil:
		respond.JSON(w, http.StatusOK, map[string]bool{"ok": true})
		return nil
	case errors.As(err, &fe) && fe.Kind == fail.Invalid:
		line, col := ErrorLine(fe.Message)
		respond.JSON(w, http.StatusBadRequest, checkFailed{Error: fe.Message, Line: line, Column: col})
		return nil
	}
	return err
}

// The ways gopher-lua names where an error is: the parser's
// "line:3(column:5)", the compiler's "at line 3" and "line(3)".
var (
	parserAt   = regexp.MustCompile(`line:(\d+)\(column:(\d+)\)`)
	compilerAt = regexp.MustCompile(`at line (\d+)`)
	nearLine   = regexp.MustCompile(`line\((\d+)\)`)
)

// ErrorLine returns the line (and column, when known) a Lua compile
// error message names, or zeros: the line counts from 1, the column is
// the parser's (where the token it stopped at ends).
func ErrorLine(msg string) (line, column int) {
	if m := parserAt.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		column, _ = strconv.Atoi(m[2])
		return line, column
	}
	for _, re := range []*regexp.Regexp{compilerAt, nearLine} {
		if m := re.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			return line, 0
		}
	}
	return 0, 0
}
