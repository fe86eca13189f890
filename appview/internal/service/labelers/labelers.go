// Package labelers manages the instance's labeler subscriptions: which
// labelers it follows and whether each is active or paused. The
// subscription manager (which resolves each labeler and consumes its
// label stream) learns of every change through Options.OnChange.
package labelers

import (
	"context"
	"errors"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the service needs.
type Store interface {
	PutLabeler(ctx context.Context, did string, at time.Time) (created bool, err error)
	GetLabeler(ctx context.Context, did string) (storage.Labeler, error)
	ListLabelers(ctx context.Context) ([]storage.Labeler, error)
	SetLabelerStatus(ctx context.Context, did, status string, at time.Time) error
	DeleteLabeler(ctx context.Context, did string) error
}

// Options configure a Service.
type Options struct {
	Store  Store
	Events *eventlog.Log // nil: changes are not logged
	// Now is the clock of created_at and updated_at; time.Now when nil.
	Now func() time.Time
	// OnChange, when not nil, is called with the labeler's DID after
	// every successful add, status change and delete, so that the
	// subscription manager connects, disconnects or forgets it. It must
	// not block for long: it runs in the admin request.
	OnChange func(did string)
}

// Service manages labeler subscriptions.
type Service struct{ opt Options }

// New returns a Service.
func New(opt Options) *Service {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Service{opt: opt}
}

var (
	errNotFound  = fail.New(fail.NotFound, "labeler not found")
	errNoDID     = fail.New(fail.Invalid, "did is required")
	errNoStatus  = fail.New(fail.Invalid, "status is required")
	errBadStatus = fail.New(fail.Invalid, "invalid status: use active or paused")
)

// ParseDID checks a labeler's DID syntax (it is not resolved here: the
// subscription manager resolves it when it connects).
func ParseDID(raw string) (string, error) {
	if raw == "" {
		return "", errNoDID
	}
	did, err := syntax.ParseDID(raw)
	if err != nil {
		return "", fail.Wrap(fail.Invalid, "invalid did", err)
	}
	return did.String(), nil
}

// List returns every labeler, oldest first.
func (s *Service) List(ctx context.Context) ([]storage.Labeler, error) {
	return s.opt.Store.ListLabelers(ctx)
}

// Add subscribes to the labeler did on behalf of actor, or sets an
// existing subscription active again (keeping its cursor and labels);
// created reports which.
func (s *Service) Add(ctx context.Context, actor, rawDID string) (created bool, err error) {
	did, err := ParseDID(rawDID)
	if err != nil {
		return false, err
	}
	created, err = s.opt.Store.PutLabeler(ctx, did, s.opt.Now())
	if err != nil {
		return false, err
	}
	typ := "labeler.reactivated"
	if created {
		typ = "labeler.added"
	}
	s.changed(ctx, eventlog.Entry{Type: typ, ActorDID: actor, Subject: did})
	return created, nil
}

// SetStatus pauses (storage.LabelerPaused) or resumes
// (storage.LabelerActive) the labeler did on behalf of actor, keeping its
// cursor, and returns it as it now is. Setting the status it already has
// changes nothing but its update time and logs nothing.
func (s *Service) SetStatus(ctx context.Context, actor, rawDID, status string) (storage.Labeler, error) {
	did, err := ParseDID(rawDID)
	if err != nil {
		return storage.Labeler{}, err
	}
	switch status {
	case "":
		return storage.Labeler{}, errNoStatus
	case storage.LabelerActive, storage.LabelerPaused:
	default:
		return storage.Labeler{}, errBadStatus
	}
	before, err := s.get(ctx, did)
	if err != nil {
		return storage.Labeler{}, err
	}
	if err := s.opt.Store.SetLabelerStatus(ctx, did, status, s.opt.Now()); err != nil {
		return storage.Labeler{}, notFound(err)
	}
	e := eventlog.Entry{ActorDID: actor, Subject: did}
	switch {
	case before.Status == status:
	case status == storage.LabelerPaused:
		e.Type = "labeler.paused"
	default:
		e.Type = "labeler.resumed"
	}
	s.changed(ctx, e)
	return s.get(ctx, did)
}

// Delete removes the labeler did and every label it emitted, on behalf
// of actor.
func (s *Service) Delete(ctx context.Context, actor, rawDID string) error {
	did, err := ParseDID(rawDID)
	if err != nil {
		return err
	}
	if err := s.opt.Store.DeleteLabeler(ctx, did); err != nil {
		return notFound(err)
	}
	s.changed(ctx, eventlog.Entry{Type: "labeler.deleted", ActorDID: actor, Subject: did})
	return nil
}

func (s *Service) get(ctx context.Context, did string) (storage.Labeler, error) {
	l, err := s.opt.Store.GetLabeler(ctx, did)
	return l, notFound(err)
}

// changed logs e (unless it has no type) and tells the subscription
// manager about its subject.
func (s *Service) changed(ctx context.Context, e eventlog.Entry) {
	if e.Type != "" && s.opt.Events != nil {
		s.opt.Events.Record(ctx, e)
	}
	if s.opt.OnChange != nil {
		s.opt.OnChange(e.Subject)
	}
}

func notFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return errNotFound
	}
	return err
}
