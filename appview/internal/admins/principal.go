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

// EffectivePermissions is a user's permission set; the super user holds
// every permission, including ones added after it was created.
func EffectivePermissions(u storage.AdminUser) Set {
	if u.IsSuper {
		return NewSet(All())
	}
	return NewSet(u.Permissions)
}
