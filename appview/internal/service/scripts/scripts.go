// Package scripts is the service for trigger-keyed Lua scripts and script
// variables: scripts are checked by the script runtime (syntax), made
// live at once and audited without their source; variables are sealed at
// rest and never shown.
package scripts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// MaxSourceSize bounds a script's source in bytes (256 KiB).
const MaxSourceSize = 256 << 10

// ValidateTrigger checks that trigger is a kind (xrpc.query,
// xrpc.procedure, record.index, record.create, record.update or
// record.delete), a colon and a valid NSID, or label.arrive, a colon and
// a label value or `*`; its error is Invalid.
func ValidateTrigger(trigger string) error {
	kind, rest, ok := strings.Cut(trigger, ":")
	if !ok || !slices.Contains(script.Kinds(), kind) {
		return fail.Invalidf("trigger must be one of %s followed by :<nsid> (label.arrive: by a label value or *)",
			strings.Join(script.Kinds(), ", "))
	}
	if kind == script.KindLabel {
		if rest != script.AnyLabel && !ValidLabelValue(rest) {
			return fail.New(fail.Invalid, "trigger has an invalid label value")
		}
		return nil
	}
	if _, err := syntax.ParseNSID(rest); err != nil {
		return fail.New(fail.Invalid, "trigger has an invalid NSID")
	}
	return nil
}

// MaxLabelValueLength bounds a label value, in bytes, as atproto does.
const MaxLabelValueLength = 128

// ValidLabelValue reports whether v can be a label value: 1 to 128 bytes
// of ASCII letters, digits and hyphens, with an optional leading `!`
// (the values atproto reserves, such as `!hide`).
func ValidLabelValue(v string) bool {
	if len(v) > MaxLabelValueLength {
		return false
	}
	v = strings.TrimPrefix(v, "!")
	if v == "" {
		return false
	}
	for _, c := range []byte(v) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Runtime is what the service needs from the script runtime.
type Runtime interface {
	// Check compiles source and returns its syntax error, if any.
	Check(source string) error
	// Reload makes stored script changes take effect at once.
	Reload(ctx context.Context) error
}

// Service manages trigger-keyed scripts.
type Service struct {
	store   storage.ScriptStore
	runtime Runtime // nil: no syntax check, nothing to reload
	events  *eventlog.Log
	log     *slog.Logger
}

// Options configure a Service.
type Options struct {
	Store storage.ScriptStore
	// Runtime checks and reloads scripts; nil: no syntax check, nothing
	// to reload.
	Runtime Runtime
	// Events records the service's actions.
	Events *eventlog.Log
	Logger *slog.Logger // default slog.Default()
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{store: opts.Store, runtime: opts.Runtime, events: opts.Events, log: opts.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

var errNotFound = fail.New(fail.NotFound, "script not found")

// checkSource validates a source and runs the syntax check.
func (s *Service) checkSource(source string) error {
	switch {
	case strings.TrimSpace(source) == "":
		return fail.New(fail.Invalid, "source must not be empty")
	case len(source) > MaxSourceSize:
		return fail.Invalidf("source must be at most %d bytes", MaxSourceSize)
	}
	if s.runtime != nil {
		if err := s.runtime.Check(source); err != nil {
			return fail.New(fail.Invalid, "script has a syntax error: "+err.Error())
		}
	}
	return nil
}

// ErrNoCheck answers a syntax check on an instance that runs no scripts.
var ErrNoCheck = fail.New(fail.Unavailable, "this instance runs no scripts, so sources are not checked")

// Check runs the checks of a create on source without storing anything:
// nil when it would be accepted, else the Invalid error a create would
// answer (`script has a syntax error: ...` when the Lua does not
// compile). It is ErrNoCheck on an instance that runs no scripts.
func (s *Service) Check(source string) error {
	if s.runtime == nil {
		return ErrNoCheck
	}
	return s.checkSource(source)
}

// changed makes a stored change take effect and audits it.
func (s *Service) changed(ctx context.Context, actor, event string, sc storage.Script) {
	s.reload(ctx)
	s.events.Record(ctx, eventlog.Entry{Type: event, ActorDID: actor, Subject: sc.Trigger,
		Detail: map[string]any{"id": sc.ID, "revision": sc.Revision}})
}

// reload makes stored changes live; a failure is logged (the change is
// stored and takes effect at the next successful reload).
func (s *Service) reload(ctx context.Context) {
	if s.runtime == nil {
		return
	}
	if err := s.runtime.Reload(ctx); err != nil {
		s.log.ErrorContext(ctx, "reloading scripts after a change failed", "err", err)
	}
}

// List returns the scripts whose trigger ends with suffix ("" for all).
func (s *Service) List(ctx context.Context, suffix string) ([]storage.Script, error) {
	all, err := s.store.ListScripts(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(sc storage.Script) bool { return !strings.HasSuffix(sc.Trigger, suffix) }), nil
}

// Get returns one script with its source.
func (s *Service) Get(ctx context.Context, id string) (storage.Script, error) {
	sc, err := s.store.GetScript(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return sc, errNotFound
	}
	return sc, err
}

// Put creates the script of a trigger, or replaces its source and
// description (nil keeps an empty one), on behalf of actor, and reports
// whether it is new. A nil source is refused.
func (s *Service) Put(ctx context.Context, actor, trigger string, source, description *string) (storage.Script, bool, error) {
	sc := storage.Script{Trigger: trigger}
	switch {
	case trigger == "":
		return sc, false, fail.New(fail.Invalid, "trigger is required")
	case ValidateTrigger(trigger) != nil:
		return sc, false, ValidateTrigger(trigger)
	case source == nil:
		return sc, false, fail.New(fail.Invalid, "source is required")
	}
	if err := s.checkSource(*source); err != nil {
		return sc, false, err
	}
	sc.Source = *source
	if description != nil {
		sc.Description = *description
	}
	stored, created, err := s.store.PutScript(ctx, sc)
	if err != nil {
		return stored, false, fmt.Errorf("store script: %w", err)
	}
	event := "script.updated"
	if created {
		event = "script.created"
	}
	s.changed(ctx, actor, event, stored)
	return stored, created, nil
}

// Update edits a script's source, description or both on behalf of actor.
func (s *Service) Update(ctx context.Context, actor, id string, source, description *string) (storage.Script, error) {
	if source == nil && description == nil {
		return storage.Script{}, fail.New(fail.Invalid, "source or description is required")
	}
	if source != nil {
		if err := s.checkSource(*source); err != nil {
			return storage.Script{}, err
		}
	}
	sc, err := s.store.UpdateScript(ctx, id, source, description)
	if errors.Is(err, storage.ErrNotFound) {
		return sc, errNotFound
	}
	if err != nil {
		return sc, err
	}
	s.changed(ctx, actor, "script.updated", sc)
	return sc, nil
}

// Delete removes a script on behalf of actor.
func (s *Service) Delete(ctx context.Context, actor, id string) error {
	sc, err := s.store.GetScript(ctx, id) // for the audit subject
	if err == nil {
		err = s.store.DeleteScript(ctx, id)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	s.reload(ctx)
	s.events.Record(ctx, eventlog.Entry{Type: "script.deleted", ActorDID: actor, Subject: sc.Trigger,
		Detail: map[string]any{"id": sc.ID, "revision": sc.Revision}})
	return nil
}
