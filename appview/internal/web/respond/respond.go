// Package respond writes HTTP responses in Lexview's one JSON format:
// success bodies as JSON, and every error as {"error": "..."}.
package respond

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
)

// JSON writes v as a JSON body with status.
func JSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		Error(w, http.StatusInternalServerError, "internal server error")
		return
	}
	Raw(w, status, body)
}

// Raw writes an already encoded JSON body with status.
func Raw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorBody is the shape of every error response.
type errorBody struct {
	Error string `json:"error"`
}

// Error writes {"error": msg} with status.
func Error(w http.ResponseWriter, status int, msg string) {
	Raw(w, status, ErrorBody(msg))
}

// ErrorBody is the body of every error answer: {"error": msg}.
func ErrorBody(msg string) []byte {
	body, _ := json.Marshal(errorBody{Error: msg})
	return body
}

// statusOf maps a failure kind to its HTTP status: the one place where a
// service's answer becomes a status code. The interface specification's
// error table fixes 400, 401, 403, 404, 409 and 500; an upstream failure
// (a PDS, the PLC directory, a forwarded service) is its "server failure",
// 500, with the failure's message shown. The statuses of the other kinds
// (413, 429, 503) are ones the specification leaves open.
var statusOf = map[fail.Kind]int{
	fail.Invalid:         http.StatusBadRequest,
	fail.NotFound:        http.StatusNotFound,
	fail.Conflict:        http.StatusConflict,
	fail.Forbidden:       http.StatusForbidden,
	fail.Unauthenticated: http.StatusUnauthorized,
	fail.TooLarge:        http.StatusRequestEntityTooLarge,
	fail.RateLimited:     http.StatusTooManyRequests,
	fail.Unavailable:     http.StatusServiceUnavailable,
	fail.Upstream:        http.StatusInternalServerError,
	fail.Failed:          http.StatusInternalServerError,
}

// Status is the HTTP status of a service error: its kind's status, 500
// for an internal error.
func Status(err error) int {
	if s, ok := statusOf[fail.KindOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Fail answers a service error: {"error": message} with its kind's status,
// or, for an internal error, a logged 500 that reveals nothing.
func Fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, msg := Describe(w, r, log, err)
	Error(w, status, msg)
}

// Describe is Fail for an answer of another form (a page): it returns
// the status and the message to show for err, having logged an internal
// error (whose message reveals nothing) and set Retry-After on w for a
// rate limit.
func Describe(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) (status int, msg string) {
	if fail.KindOf(err) == fail.Internal {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		return http.StatusInternalServerError, internalMessage
	}
	var fe *fail.Error
	if errors.As(err, &fe) && fe.Kind == fail.RateLimited && fe.RetryAfter > 0 {
		secs := int64(math.Ceil(fe.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	}
	return Status(err), fail.Message(err)
}

// internalMessage is all an internal error says.
const internalMessage = "internal server error"

// Internal logs err and answers 500 without revealing it.
func Internal(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	Error(w, http.StatusInternalServerError, internalMessage)
}

// ErrBodyTooLarge is returned by DecodeJSON when the body exceeds its limit.
var ErrBodyTooLarge = errors.New("request body too large")

// DecodeJSON reads one JSON value of at most limit bytes from r's body into
// dst. Unknown fields are allowed.
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	if err := dec.Decode(dst); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return ErrBodyTooLarge
		}
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: trailing data after the body")
	}
	return nil
}

// Recover turns a panic in next into a logged 500 JSON answer, so no panic
// reaches a client as a dropped connection.
func Recover(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			Error(w, http.StatusInternalServerError, "internal server error")
		}()
		next.ServeHTTP(w, r)
	})
}

// AcceptsHTML reports whether r is a browser's navigation: it accepts
// text/html. Handlers that answer browsers with a page (a failed sign-in,
// a linked repository's callback) answer other clients in JSON.
func AcceptsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		media, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(media), "text/html") {
			return true
		}
	}
	return false
}
