package admin

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Deps are what admin handler modules work with.
type Deps struct {
	Store    storage.Store
	Lexicons *lexicon.Registry
	Clients  *clients.Registry
	// ClientManager creates, edits and deletes API clients.
	ClientManager *clients.Manager
	Events        *eventlog.Log
	// Defaults are the instance's rate-limit defaults.
	Defaults clients.Limits
	Now      func() time.Time
	Log      *slog.Logger
	// Backfill creates and steers backfill jobs; nil when the instance
	// runs none (the backfill endpoints then answer 503, and uploading a
	// record lexicon creates no job).
	Backfill *backfill.Manager
	// Sealer seals secrets at rest (client authentication keys).
	Sealer *oauth.Sealer
	// PublicURL is the instance's public base URL (PUBLIC_URL), from which
	// published URLs such as a client's jwks_uri are built.
	PublicURL string
	// HTTPClient makes outbound calls (fetching client metadata
	// documents); nil means a default client.
	HTTPClient *http.Client
	// StreamKeepalive is how often an idle Server-Sent Events stream
	// sends a comment; 0 means 15 s.
	StreamKeepalive time.Duration
}

// Audit records an admin action by p in the event log.
func (d Deps) Audit(ctx context.Context, p *admins.Principal, eventType, subject string, detail any) {
	d.Events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: p.DID(), Subject: subject, Detail: detail})
}

// Failed answers a storage error, if any: 404 with notFound for
// storage.ErrNotFound, 500 (logged) otherwise. It reports whether err was
// not nil, that is, whether the request is answered.
func (d Deps) Failed(w http.ResponseWriter, r *http.Request, err error, notFound string) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, storage.ErrNotFound):
		respond.Error(w, http.StatusNotFound, notFound)
	default:
		respond.Internal(w, r, d.Log, err)
	}
	return true
}
