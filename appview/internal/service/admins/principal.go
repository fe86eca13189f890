package admins

import "github.com/lexview/lexview/storage"

// Principal is an authenticated admin caller.
type Principal struct {
	User storage.AdminUser
	// KeyID is set when the caller used an admin API key.
	KeyID string
	// Perms are the effective permissions: the user's, or for an API key
	// the intersection of the key's and its creator's.
	Perms Set
}

// DID is the caller's DID.
func (p *Principal) DID() string { return p.User.DID }

// ActsAsSuper reports whether the caller may act as the super user: the
// user is the super user and the credential itself carries every
// permission. An API key of the super user that holds fewer permissions
// is limited to them, and is not the super user.
func (p *Principal) ActsAsSuper() bool {
	if !p.User.IsSuper {
		return false
	}
	for _, perm := range All() {
		if !p.Perms.Has(perm) {
			return false
		}
	}
	return true
}

// EffectivePermissions is a user's permission set; the super user holds
// every permission, including ones added after it was created.
func EffectivePermissions(u storage.AdminUser) Set {
	if u.IsSuper {
		return NewSet(All())
	}
	return NewSet(u.Permissions)
}
