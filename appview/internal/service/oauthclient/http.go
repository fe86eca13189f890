package oauthclient

import (
	"log/slog"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Finisher completes the flows of one purpose once the callback has
// exchanged the code: it answers the browser (sets a cookie, binds a
// grant, ...).
type Finisher interface {
	Finish(w http.ResponseWriter, r *http.Request, res Result)
}

// FinisherFunc adapts a function to Finisher.
type FinisherFunc func(w http.ResponseWriter, r *http.Request, res Result)

// Finish calls f.
func (f FinisherFunc) Finish(w http.ResponseWriter, r *http.Request, res Result) { f(w, r, res) }

var errUnknownPurpose = fail.New(fail.Invalid, "invalid OAuth callback: the flow has no handler on this instance")

// CallbackHandler serves GET /oauth/callback: it finishes the flow
// (Callback) and hands the result to the Finisher of the flow's purpose.
// A refused callback is answered with the error and nothing is stored;
// a session of a purpose with no Finisher is ended.
func (c *Client) CallbackHandler(finishers map[string]Finisher, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		res, err := c.Callback(r.Context(), r.Host, r.URL.Query())
		if err != nil {
			log.InfoContext(r.Context(), "OAuth callback refused", "err", err)
			respond.Fail(w, r, log, err)
			return
		}
		f, ok := finishers[res.Purpose]
		if !ok {
			if err := c.EndSession(r.Context(), res.DID, res.SessionID); err != nil {
				log.WarnContext(r.Context(), "ending an OAuth session failed", "did", res.DID, "err", err)
			}
			respond.Fail(w, r, log, errUnknownPurpose)
			return
		}
		f.Finish(w, r, res)
	})
}
