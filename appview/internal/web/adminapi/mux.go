// Package adminapi is the core of the admin API: authentication of admin
// callers, the permission table and the one gate that enforces it, and the
// helpers handler modules share. Handler modules (users, lexicons, API
// clients, ...) live in sub-packages and mount their handlers on a Mux.
package adminapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Func serves an authenticated, authorised admin request and returns the
// service error that answers it, if any: the Mux writes it (respond.Fail),
// so a handler that fails only returns.
type Func func(w http.ResponseWriter, r *http.Request, p *admins.Principal) error

// Mux routes admin requests through authentication and the permission
// gate to handlers.
type Mux struct {
	mux     *http.ServeMux
	auth    *Authenticator
	log     *slog.Logger
	mounted []string
}

// NewMux returns an empty Mux.
func NewMux(auth *Authenticator, log *slog.Logger) *Mux {
	return &Mux{mux: http.NewServeMux(), auth: auth, log: log}
}

// RuleFor returns the permission rule of an admin route ("METHOD /admin/..."
// in net/http pattern syntax), and whether the route is in the table.
func RuleFor(route string) (Rule, bool) {
	rule, ok := table[route]
	return rule, ok
}

// HandleFunc mounts f on route ("METHOD /admin/..."), which must be in
// the permission table: authentication, then the permission gate, then f;
// the error f returns is answered through respond.Fail.
func (m *Mux) HandleFunc(route string, f Func) {
	rule, ok := RuleFor(route)
	if !ok {
		panic(fmt.Sprintf("admin: route %q is not in the permission table", route))
	}
	m.mounted = append(m.mounted, route)
	m.mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
		p, err := m.auth.Authenticate(r)
		if err != nil {
			respond.Fail(w, r, m.log, err)
			return
		}
		if !rule.allows(p) {
			respond.Error(w, http.StatusForbidden, "insufficient permissions")
			return
		}
		if err := f(w, r, p); err != nil {
			respond.Fail(w, r, m.log, err)
		}
	})
}

// Mounted lists the mounted routes, sorted.
func (m *Mux) Mounted() []string {
	out := slices.Clone(m.mounted)
	slices.Sort(out)
	return out
}

// ServeHTTP implements http.Handler.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := m.mux.Handler(r); pattern == "" {
		respond.Error(w, http.StatusNotFound, "not found")
		return
	}
	m.mux.ServeHTTP(w, r)
}

// allows reports whether p passes the rule.
func (rule Rule) allows(p *admins.Principal) bool {
	if rule.SuperOnly {
		return p.ActsAsSuper()
	}
	for _, need := range rule.Perms {
		if !p.Perms.Has(need) {
			return false
		}
	}
	return true
}

// Require refuses, as the gate does, a request that asks for more than
// its route's permission grants: p must also hold perms. A handler calls
// it for an optional part of its request that another permission governs
// (the indexes of a lexicon upload need indexes:manage besides
// lexicons:create). The table stays the place where each route's own
// permission is decided.
func Require(p *admins.Principal, perms ...admins.Permission) error {
	if !need(perms...).allows(p) {
		return fail.New(fail.Forbidden, "insufficient permissions")
	}
	return nil
}

// MaxBodySize bounds admin JSON bodies.
const MaxBodySize = 4 << 20

// Read reads a JSON body into dst. It returns a TooLarge error for an
// oversized body and an Invalid `invalid request body` for anything that
// is not one JSON value.
func Read(w http.ResponseWriter, r *http.Request, dst any) error {
	err := respond.DecodeJSON(w, r, MaxBodySize, dst)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, respond.ErrBodyTooLarge):
		return fail.Wrap(fail.TooLarge, "request body too large", err)
	default:
		return fail.Wrap(fail.Invalid, "invalid request body", err)
	}
}

// Timestamp formats a time the way every admin response does: ISO 8601
// UTC with milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// NullableTimestamp formats t, or returns nil for the zero time.
func NullableTimestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := Timestamp(t)
	return &s
}

// Cursor returns the `cursor` parameter: "" when absent, an Invalid
// `invalid cursor` error when present but empty.
func Cursor(r *http.Request) (string, error) {
	q := r.URL.Query()
	if q.Has("cursor") && q.Get("cursor") == "" {
		return "", fail.New(fail.Invalid, "invalid cursor")
	}
	return q.Get("cursor"), nil
}

// Limit parses a `limit` parameter with a default and a maximum.
func Limit(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, fail.Invalidf("limit must be an integer between 1 and %d", max)
	}
	return n, nil
}
