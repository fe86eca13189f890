package appview

import (
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
)

// Error is a failure the caller can act on, returned by the App's
// operations (Lexicons, Clients, Bootstrap): its kind, and a message safe
// to show to whoever made the request, worded as the admin API's error
// strings. Test the kind with errors.Is against the kinds below
// (errors.Is(err, appview.ErrNotFound)), or get the Error with errors.As.
//
// An error in whose chain errors.As finds no *Error is an internal
// failure (a database error, a bug): log it, and show none of it.
type Error struct {
	// Kind is what went wrong: ErrInvalid, ErrNotFound and the others.
	Kind ErrorKind
	// Message is safe to show; it never holds the cause.
	Message string
	// RetryAfter, with ErrRateLimited, is how long to wait before trying
	// again (0 when unknown).
	RetryAfter time.Duration

	err error // the failure as reported, with its cause
}

// Error is the message followed by the cause, for logs.
func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the failure as reported, whose chain holds the cause
// (errors.Is(err, storage.ErrNotFound) sees through an Error).
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(ErrorKind)
	return ok && k == e.Kind
}

// ErrorKind is the kind of an Error: what went wrong, in terms of what the
// caller can do about it. Each kind is an error value, for errors.Is.
type ErrorKind string

// Error returns the kind's name.
func (k ErrorKind) Error() string { return string(k) }

// The kinds of Error, with the HTTP status the admin and XRPC APIs
// answer for them.
const (
	ErrInvalid         ErrorKind = "invalid"         // 400: the request is malformed or breaks a rule
	ErrNotFound        ErrorKind = "not found"       // 404: the thing named does not exist
	ErrConflict        ErrorKind = "conflict"        // 409: the request collides with the current state
	ErrForbidden       ErrorKind = "forbidden"       // 403: the caller may not do this
	ErrUnauthenticated ErrorKind = "unauthenticated" // 401: the caller's credentials are missing or wrong
	ErrTooLarge        ErrorKind = "too large"       // 413: the request is over its size limit
	ErrRateLimited     ErrorKind = "rate limited"    // 429: the caller must wait (Error.RetryAfter)
	ErrUnavailable     ErrorKind = "unavailable"     // 503: the capability is off or not ready on this instance
	ErrUpstream        ErrorKind = "upstream"        // 500: a PDS, the PLC directory, a relay or a plugin failed or refused
	ErrFailed          ErrorKind = "failed"          // 500: the operation ran and failed (a script); Message says how
)

// errorKinds maps the services' kinds to the public ones; fail.Internal
// has none.
var errorKinds = map[fail.Kind]ErrorKind{
	fail.Invalid:         ErrInvalid,
	fail.NotFound:        ErrNotFound,
	fail.Conflict:        ErrConflict,
	fail.Forbidden:       ErrForbidden,
	fail.Unauthenticated: ErrUnauthenticated,
	fail.TooLarge:        ErrTooLarge,
	fail.RateLimited:     ErrRateLimited,
	fail.Unavailable:     ErrUnavailable,
	fail.Upstream:        ErrUpstream,
	fail.Failed:          ErrFailed,
}

// publicError returns err as the App's callers see it: a service failure
// with a kind becomes an *Error wrapping it; anything else (nil, an
// internal failure) is returned as it is.
func publicError(err error) error {
	var f *fail.Error
	if !errors.As(err, &f) {
		return err
	}
	kind, ok := errorKinds[f.Kind]
	if !ok {
		return err
	}
	return &Error{Kind: kind, Message: f.Message, RetryAfter: f.RetryAfter, err: err}
}
