// Package oauthcallback serves GET /oauth/callback, where every OAuth flow
// the instance runs as a client comes back: the instance's OAuth client
// (service/oauthclient) finishes the flow, and the Finisher of the flow's
// purpose answers the browser (the dashboard sign-in sets its cookie, a
// linked repo grant is bound).
package oauthcallback

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Finisher completes the flows of one purpose once the callback has
// exchanged the code: it answers the browser (sets a cookie, binds a
// grant, ...).
type Finisher interface {
	Finish(w http.ResponseWriter, r *http.Request, res oauthclient.Result)
}

// Failer answers the refused callbacks of a purpose's flows. A Finisher
// that is one answers them; the refusals of the others are answered with
// the JSON error.
type Failer interface {
	Fail(w http.ResponseWriter, r *http.Request, err error)
}

// FinisherFunc adapts a function to Finisher.
type FinisherFunc func(w http.ResponseWriter, r *http.Request, res oauthclient.Result)

// Finish calls f.
func (f FinisherFunc) Finish(w http.ResponseWriter, r *http.Request, res oauthclient.Result) {
	f(w, r, res)
}

// Flows is the instance's OAuth client as the callback uses it
// (*oauthclient.Client).
type Flows interface {
	Callback(ctx context.Context, host string, params url.Values) (oauthclient.Result, error)
	EndSession(ctx context.Context, did syntax.DID, sessionID string) error
}

var errUnknownPurpose = fail.New(fail.Invalid, "invalid OAuth callback: the flow has no handler on this instance")

// Options configure the callback; Flows is required.
type Options struct {
	Flows Flows
	// Finishers finish the flows, by purpose.
	Finishers map[string]Finisher
	// Unknown answers the refusal of a callback whose flow is unknown (no
	// state, or an unknown, used or expired one), whose purpose nobody
	// knows; nil answers it with the JSON error.
	Unknown Failer
	Logger  *slog.Logger
}

// New returns the handler of GET /oauth/callback: it finishes the flow
// (Flows.Callback) and hands the result to the Finisher of the flow's
// purpose. A refused callback is answered with the error by the purpose's
// Finisher when it is a Failer (Options.Unknown when the flow is unknown),
// else in JSON, and nothing is stored; a session of a purpose with no
// Finisher is ended.
func New(o Options) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		res, err := o.Flows.Callback(r.Context(), r.Host, r.URL.Query())
		if err != nil {
			log.InfoContext(r.Context(), "OAuth callback refused", "purpose", res.Purpose, "err", err)
			failer, ok := o.Finishers[res.Purpose].(Failer)
			if res.Purpose == "" {
				failer, ok = o.Unknown, o.Unknown != nil
			}
			if ok {
				failer.Fail(w, r, err)
				return
			}
			respond.Fail(w, r, log, err)
			return
		}
		f, ok := o.Finishers[res.Purpose]
		if !ok {
			if err := o.Flows.EndSession(r.Context(), res.DID, res.SessionID); err != nil {
				log.WarnContext(r.Context(), "ending an OAuth session failed", "did", res.DID, "err", err)
			}
			respond.Fail(w, r, log, errUnknownPurpose)
			return
		}
		f.Finish(w, r, res)
	})
}

// LinkedRepo finishes the flows of linked repo grants
// (linkedrepos.PurposeLinkedRepo): the grant is bound to the account
// (linkedrepos.Service.CompleteAuthorization) and the answer is
// {grant_id, did, status}.
type LinkedRepo struct {
	Service *linkedrepos.Service
	// Flows ends the session of a refused binding.
	Flows linkedrepos.Flows
	// Handles resolves the handles grants are pinned to.
	Handles linkedrepos.Handles
	// Pages answers a browser (a request accepting text/html) with a
	// page instead of the JSON: the account linked, or why not, with the
	// way back to the dashboard. Nil answers every client in JSON.
	Pages  LinkedRepoPages
	Logger *slog.Logger
}

// LinkedRepoPages renders the outcome of a linked repo's authorization
// for a browser (*invitepage.Handler).
type LinkedRepoPages interface {
	Linked(w http.ResponseWriter, r *http.Request, out linkedrepos.Authorized)
	LinkFailed(w http.ResponseWriter, r *http.Request, err error)
}

var _ Failer = LinkedRepo{}

// Finish implements Finisher.
func (l LinkedRepo) Finish(w http.ResponseWriter, r *http.Request, res oauthclient.Result) {
	out, err := l.Service.CompleteAuthorization(r.Context(), res, l.Flows, l.Handles)
	if err != nil {
		l.Fail(w, r, err)
		return
	}
	if l.Pages != nil && respond.AcceptsHTML(r) {
		l.Pages.Linked(w, r, out)
		return
	}
	respond.JSON(w, http.StatusOK, out)
}

// Fail implements Failer: a refused authorization or binding.
func (l LinkedRepo) Fail(w http.ResponseWriter, r *http.Request, err error) {
	if l.Pages != nil && respond.AcceptsHTML(r) {
		l.Pages.LinkFailed(w, r, err)
		return
	}
	respond.Fail(w, r, l.Logger, err)
}
