package appview

import (
	"context"

	"github.com/lexview/lexview/appview/internal/service/admins"
)

// claimTokenPurpose derives the claim token from the sealing key
// (oauth.Sealer.Derive).
const claimTokenPurpose = "admins:claim_token"

// deriveClaimToken is the instance's claim token: derived from the key
// that seals secrets at rest, it is the same at every start (and on every
// instance sharing the database and the key) until the instance is
// claimed, and is never stored.
func (a *App) deriveClaimToken() string {
	return admins.ClaimTokenFrom(a.sealer.Derive(claimTokenPurpose))
}

// claimPolicy is the admins service's view of Config.Security.AdminClaim.
func (a *App) claimPolicy() admins.ClaimPolicy {
	p := admins.ClaimPolicy{Command: a.cfg.Security.ClaimCommand}
	switch a.cfg.Security.AdminClaim {
	case ClaimFirstRequest:
		p.FirstRequest = true
	case ClaimWithToken:
		p.Token = a.claimToken
	}
	return p
}

// ClaimToken returns the token that lets an admin request claim this
// instance while it has no admin user (Config.Security.AdminClaim
// ClaimWithToken, sent in the X-Claim-Token header), or "" in the other
// modes. It is derived from the key sealing secrets at rest
// (Security.TokenEncryptionKey or the generated key file), so it stays
// the same across restarts, and is worthless once the instance has a
// super user.
func (a *App) ClaimToken() string { return a.claimToken }

// Bootstrap makes did the super user of this App's instance when no admin
// user exists yet (or, with forceNewKey, accepts did when it already is
// the super user), mints an admin API key holding every permission and
// returns its secret, which is shown only this once: what `appview admin
// bootstrap` does, for a program that embeds Lexview. It works in every
// claim mode, before or after Start. A super user that exists already
// (another DID, or did without forceNewKey) is ErrBootstrapRefused.
func (a *App) Bootstrap(ctx context.Context, did string, forceNewKey bool) (string, error) {
	return bootstrap(ctx, a.svc.Admins, did, forceNewKey)
}

// Unclaimed reports whether the instance has no admin user yet: no one
// can use the admin API or the dashboard until it is claimed (Bootstrap,
// or the claim mode's first admin request).
func (a *App) Unclaimed(ctx context.Context) (bool, error) {
	return a.svc.Admins.Unclaimed(ctx)
}

// announceClaim says, loudly, that the instance has no admin yet and how
// to claim it. It is called once the App has started.
func (a *App) announceClaim(ctx context.Context) {
	unclaimed, err := a.svc.Admins.Unclaimed(ctx)
	if err != nil || !unclaimed {
		return
	}
	how := a.claimPolicy().How()
	switch a.cfg.Security.AdminClaim {
	case ClaimWithToken:
		a.log.WarnContext(ctx, "THIS INSTANCE HAS NO ADMIN YET: claim it with "+how+" and sign in with the key it prints")
		a.log.InfoContext(ctx, "or claim it over HTTP: send this claim token in "+admins.ClaimTokenHeader+" with your first admin request "+
			"(a service-auth JWT for aud, from your PDS's com.atproto.server.getServiceAuth)",
			"claim_token", a.claimToken, "aud", a.InstanceDID(ctx))
	case ClaimFirstRequest:
		a.log.WarnContext(ctx, "THIS INSTANCE HAS NO ADMIN YET, and ADMIN_CLAIM=first-request: the first authenticated admin request "+
			"makes its caller the super user. Claim it now with "+how)
	default:
		a.log.WarnContext(ctx, "THIS INSTANCE HAS NO ADMIN YET: claim it with "+how+" and sign in with the key it prints")
	}
}
