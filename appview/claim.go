package appview

import (
	"context"

	"github.com/lexview/lexview/appview/internal/service/admins"
)

// claimPolicy is the admins service's view of Config.Security.AdminClaim.
func (a *App) claimPolicy() admins.ClaimPolicy {
	switch a.cfg.Security.AdminClaim {
	case ClaimFirstRequest:
		return admins.ClaimPolicy{FirstRequest: true}
	case ClaimWithToken:
		return admins.ClaimPolicy{Token: a.claimToken}
	}
	return admins.ClaimPolicy{}
}

// ClaimToken returns the token that lets an admin request claim this
// instance while it has no admin user (Config.Security.AdminClaim ClaimWithToken,
// sent in the X-Claim-Token header), or "" in the other modes. It is made
// afresh by New and is worthless once the instance has a super user.
func (a *App) ClaimToken() string { return a.claimToken }

// announceClaim says, loudly, that the instance has no admin yet and how
// to claim it. It is called once the App has started.
func (a *App) announceClaim(ctx context.Context) {
	unclaimed, err := a.svc.Admins.Unclaimed(ctx)
	if err != nil || !unclaimed {
		return
	}
	const cmd = "appview admin bootstrap --did <your DID>"
	switch a.cfg.Security.AdminClaim {
	case ClaimWithToken:
		a.log.WarnContext(ctx, "THIS INSTANCE HAS NO ADMIN YET. Claim it with `"+cmd+"` (prints an admin API key), "+
			"or send your first admin request (a service-auth JWT) with this header; the token works once, until the instance is claimed",
			"header", admins.ClaimTokenHeader, "claim_token", a.claimToken)
	case ClaimFirstRequest:
		a.log.WarnContext(ctx, "THIS INSTANCE HAS NO ADMIN YET, and ADMIN_CLAIM=first-request: the first authenticated admin request "+
			"from any atproto account makes it the super user. Claim it now with `"+cmd+"`")
	default:
		a.log.WarnContext(ctx, "THIS INSTANCE HAS NO ADMIN YET. Claim it with `"+cmd+"`")
	}
}

// newClaimToken makes a fresh claim token.
func newClaimToken() string { return admins.NewClaimToken() }
