// Package caller names the user an operation runs for, as front ends
// identified them: services take a *User and never read credentials
// themselves (web/userauth does, from a request).
package caller

import "context"

// Ways a user was identified.
const (
	ViaDPoP        = "dpop"         // a DPoP-bound device session of the calling API client
	ViaServiceAuth = "service_auth" // a service-auth JWT (a call proxied by a PDS)
	ViaSession     = "session"      // the dashboard session cookie
)

// Error strings the specification fixes: for a user's session whose
// tokens expired, and for an operation only a DPoP session can do.
const (
	MsgTokenExpired = "token_expired"
	MsgNeedsDPoP    = "requires DPoP authentication"
)

// User is an authenticated user.
type User struct {
	DID string
	// Via says how the user was identified (ViaDPoP, ...); empty for a
	// user relayed by a script's in-process call.
	Via string
	// Audience is the `aud` of a service-auth caller's token: this
	// service's DID, bare or with a service fragment.
	Audience string
	// SessionID is the device session a DPoP caller acts with (writes to
	// their PDS go through it); "" for every other caller.
	SessionID string
}

type ctxKey struct{}

// WithUser returns a context carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// UserFrom returns the user ctx carries, or nil when anonymous.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(ctxKey{}).(*User)
	return u
}
