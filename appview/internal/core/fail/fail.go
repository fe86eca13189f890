// Package fail is the error vocabulary of Lexview's services. A service
// returns an *Error that carries a Kind (what went wrong, in terms every
// front end understands) and a message that is safe to show to the caller;
// any other error is an internal failure whose text is never shown. The
// HTTP front ends turn kinds into status codes in one place
// (respond.Fail); the dashboard, the command and plugin host functions
// read the same kinds.
package fail

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies a failure by what the caller can do about it.
type Kind int

// Kinds of failure. Internal is the zero value: an error that is not an
// *Error is internal.
const (
	Internal        Kind = iota // a server-side failure; its text is not shown
	Invalid                     // the request is malformed or breaks a rule
	NotFound                    // the named thing does not exist
	Conflict                    // the request collides with the current state
	Forbidden                   // the caller may not do this
	Unauthenticated             // the caller's credentials are missing or wrong
	TooLarge                    // the request body is over its limit
	RateLimited                 // the caller must wait before trying again
	Unavailable                 // the capability is off or not ready on this instance
	Upstream                    // an upstream (a PDS, the PLC directory, a relay, a plugin) failed or refused
	Failed                      // the operation ran and failed (a script); its message is shown
)

var kindNames = [...]string{
	Internal: "internal", Invalid: "invalid", NotFound: "not found", Conflict: "conflict",
	Forbidden: "forbidden", Unauthenticated: "unauthenticated", TooLarge: "too large",
	RateLimited: "rate limited", Unavailable: "unavailable", Upstream: "upstream", Failed: "failed",
}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a failure with a kind and a message safe to show. Cause, when
// set, is the underlying error (for logs and errors.Is); it is never shown.
type Error struct {
	Kind    Kind
	Message string
	Cause   error
	// RetryAfter, for RateLimited, is how long the caller should wait.
	RetryAfter time.Duration
}

// Error implements error: the message, then the cause when there is one.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// New returns an error of kind with msg.
func New(kind Kind, msg string) *Error { return &Error{Kind: kind, Message: msg} }

// Wrap returns an error of kind with msg and cause; msg is shown, cause is not.
func Wrap(kind Kind, msg string, cause error) *Error {
	return &Error{Kind: kind, Message: msg, Cause: cause}
}

// Newf is an error of kind with a formatted message.
func Newf(kind Kind, format string, args ...any) *Error {
	return New(kind, fmt.Sprintf(format, args...))
}

// Invalidf is an Invalid error with a formatted message.
func Invalidf(format string, args ...any) *Error { return New(Invalid, fmt.Sprintf(format, args...)) }

// KindOf returns the kind of err: the kind of the first *Error in its
// chain, Internal when there is none. A nil error has no kind; KindOf(nil)
// is Internal and callers check for nil first.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Message returns the text of err that may be shown to a caller: the
// message of its *Error, or "" for an internal error.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Kind != Internal {
		return e.Message
	}
	return ""
}

// RateLimit is a RateLimited error with the wait before a retry.
func RateLimit(msg string, wait time.Duration) *Error {
	return &Error{Kind: RateLimited, Message: msg, RetryAfter: wait}
}
