package appview

import (
	"context"

	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/storage"
)

// Scripts manages the App's trigger-keyed Lua scripts and reads the names
// of its script variables (App.Scripts). It is the code behind
// /admin/scripts and GET /admin/script-variables: a change is checked by
// the script runtime, live at once and audited in the event log, with no
// actor. docs/lua.md#triggers lists the triggers.
type Scripts struct {
	svc  *scripts.Service
	vars *scripts.Variables
}

// Scripts returns the App's script manager.
func (a *App) Scripts() *Scripts { return &Scripts{a.svc.Scripts, a.svc.Variables} }

// List returns every script, with its source, ordered by trigger.
func (s *Scripts) List(ctx context.Context) ([]storage.Script, error) {
	list, err := s.svc.List(ctx, "")
	return list, publicError(err)
}

// Put creates the script of trigger ("record.create:<nsid>", see
// docs/lua.md#triggers) or replaces its source; a replaced script keeps
// its description. A bad trigger, an empty source or one that does not
// compile (`script has a syntax error: ...`) is an ErrInvalid *Error and
// changes nothing.
func (s *Scripts) Put(ctx context.Context, trigger, source string) (sc storage.Script, created bool, err error) {
	list, err := s.svc.List(ctx, "")
	if err != nil {
		return sc, false, publicError(err)
	}
	for _, old := range list {
		if old.Trigger == trigger {
			sc, err = s.svc.Update(ctx, "", old.ID, &source, nil)
			return sc, false, publicError(err)
		}
	}
	sc, created, err = s.svc.Put(ctx, "", trigger, &source, nil)
	return sc, created, publicError(err)
}

// Delete removes the script id; an unknown id is an ErrNotFound *Error.
func (s *Scripts) Delete(ctx context.Context, id string) error {
	return publicError(s.svc.Delete(ctx, "", id))
}

// Check runs the checks of Put on source without storing anything: nil
// when it would be accepted, else the ErrInvalid *Error Put would return.
func (s *Scripts) Check(source string) error { return publicError(s.svc.Check(source)) }

// VariableNames returns the names of the script variables, sorted; their
// values never leave the App.
func (s *Scripts) VariableNames(ctx context.Context) ([]string, error) {
	list, err := s.vars.List(ctx)
	if err != nil {
		return nil, publicError(err)
	}
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = v.Key
	}
	return out, nil
}

// SetVariable creates or replaces the script variable key (scripts read
// it as vars.<key>), sealed at rest, as POST /admin/script-variables
// does, with no actor. A bad key is an ErrInvalid *Error.
func (s *Scripts) SetVariable(ctx context.Context, key, value string) error {
	return publicError(s.vars.Set(ctx, "", key, &value))
}
