// Package admins is the service for the instance's administrators: the
// permission vocabulary, admin users and the super user role, admin API
// keys, and the bootstrap that makes the first super user. Front ends (the
// admin API, the command, the dashboard) call it; it knows nothing of HTTP.
package admins

import "slices"

// Permission names one admin capability. The names are the wire values.
type Permission string

// Every admin permission, as listed in the specification's "Permissions by
// endpoint" table.
const (
	LexiconsCreate          Permission = "lexicons:create"
	LexiconsRead            Permission = "lexicons:read"
	LexiconsDelete          Permission = "lexicons:delete"
	StatsRead               Permission = "stats:read"
	BackfillCreate          Permission = "backfill:create"
	BackfillRead            Permission = "backfill:read"
	EventsRead              Permission = "events:read"
	APIKeysCreate           Permission = "api-keys:create"
	APIKeysRead             Permission = "api-keys:read"
	APIKeysDelete           Permission = "api-keys:delete"
	UsersCreate             Permission = "users:create"
	UsersRead               Permission = "users:read"
	UsersUpdate             Permission = "users:update"
	UsersDelete             Permission = "users:delete"
	ScriptVariablesRead     Permission = "script-variables:read"
	ScriptVariablesCreate   Permission = "script-variables:create"
	ScriptVariablesDelete   Permission = "script-variables:delete"
	ScriptsRead             Permission = "scripts:read"
	ScriptsManage           Permission = "scripts:manage"
	LabelersCreate          Permission = "labelers:create"
	LabelersRead            Permission = "labelers:read"
	LabelersDelete          Permission = "labelers:delete"
	RecordsRead             Permission = "records:read"
	RecordsDelete           Permission = "records:delete"
	RecordsDeleteCollection Permission = "records:delete-collection"
	SettingsManage          Permission = "settings:manage"
	PluginsRead             Permission = "plugins:read"
	PluginsCreate           Permission = "plugins:create"
	PluginsDelete           Permission = "plugins:delete"
	APIClientsView          Permission = "api-clients:view"
	APIClientsCreate        Permission = "api-clients:create"
	APIClientsEdit          Permission = "api-clients:edit"
	APIClientsDelete        Permission = "api-clients:delete"
	DeadLettersRead         Permission = "dead-letters:read"
	DeadLettersManage       Permission = "dead-letters:manage"
	LinkedReposRead         Permission = "linked-repos:read"
	LinkedReposCreate       Permission = "linked-repos:create"
	LinkedReposDelete       Permission = "linked-repos:delete"
	IndexesRead             Permission = "indexes:read"
	IndexesManage           Permission = "indexes:manage"
)

// PermissionInfo describes a permission for GET /admin/permissions.
type PermissionInfo struct {
	Name        Permission `json:"name"`
	Category    string     `json:"category"`
	Description string     `json:"description"`
}

// Catalog lists every permission with its description, in display order.
// The slice is a fresh copy.
func Catalog() []PermissionInfo { return slices.Clone(catalog) }

var catalog = []PermissionInfo{
	{LexiconsCreate, "lexicons", "Upload and update lexicons, add network lexicons"},
	{LexiconsRead, "lexicons", "List and view lexicons and network lexicons"},
	{LexiconsDelete, "lexicons", "Delete lexicons and network lexicons"},
	{StatsRead, "stats", "View record statistics"},
	{BackfillCreate, "backfill", "Start, pause, resume and cancel backfill jobs"},
	{BackfillRead, "backfill", "View backfill jobs and their progress"},
	{EventsRead, "events", "Read the event log"},
	{APIKeysCreate, "api-keys", "Create admin API keys"},
	{APIKeysRead, "api-keys", "List admin API keys"},
	{APIKeysDelete, "api-keys", "Revoke admin API keys"},
	{UsersCreate, "users", "Add admin users"},
	{UsersRead, "users", "List admin users and permission definitions"},
	{UsersUpdate, "users", "Grant and revoke admin permissions"},
	{UsersDelete, "users", "Remove admin users"},
	{ScriptVariablesRead, "script-variables", "List script variable names"},
	{ScriptVariablesCreate, "script-variables", "Set script variables"},
	{ScriptVariablesDelete, "script-variables", "Delete script variables"},
	{ScriptsRead, "scripts", "View Lua scripts"},
	{ScriptsManage, "scripts", "Create, change and delete Lua scripts"},
	{LabelersCreate, "labelers", "Subscribe to labelers and change their status"},
	{LabelersRead, "labelers", "List labeler subscriptions"},
	{LabelersDelete, "labelers", "Remove labeler subscriptions"},
	{RecordsRead, "records", "Browse indexed records"},
	{RecordsDelete, "records", "Delete indexed records"},
	{RecordsDeleteCollection, "records", "Delete every record of a collection"},
	{SettingsManage, "settings", "Manage instance settings, domains, identity and database maintenance"},
	{PluginsRead, "plugins", "List plugins and view their secrets (masked)"},
	{PluginsCreate, "plugins", "Install and reload plugins, set their secrets"},
	{PluginsDelete, "plugins", "Remove plugins"},
	{APIClientsView, "api-clients", "List and view API clients and their keys"},
	{APIClientsCreate, "api-clients", "Create API clients"},
	{APIClientsEdit, "api-clients", "Change API clients and manage their authentication keys"},
	{APIClientsDelete, "api-clients", "Delete API clients"},
	{DeadLettersRead, "dead-letters", "View dead letters"},
	{DeadLettersManage, "dead-letters", "Dismiss, retry and reindex dead letters"},
	{LinkedReposRead, "linked-repos", "View linked repository grants"},
	{LinkedReposCreate, "linked-repos", "Create linked repository grants and invites"},
	{LinkedReposDelete, "linked-repos", "Delete linked repository grants"},
	{IndexesRead, "indexes", "View declared field indexes, their build and the index suggestions"},
	{IndexesManage, "indexes", "Declare and drop field indexes (also with a record lexicon upload)"},
}

// All returns every permission.
func All() []Permission {
	out := make([]Permission, len(catalog))
	for i, p := range catalog {
		out[i] = p.Name
	}
	return out
}

// known indexes Catalog for Valid.
var known = func() map[Permission]bool {
	m := make(map[Permission]bool, len(catalog))
	for _, p := range catalog {
		m[p.Name] = true
	}
	return m
}()

// Valid reports whether p is a known permission.
func Valid(p Permission) bool { return known[p] }

// Templates returns the named permission sets for new users (a fresh
// copy). Their contents are documented in docs/admin-api.md.
func Templates() map[string][]Permission {
	out := make(map[string][]Permission, len(templates))
	for name, perms := range templates {
		out[name] = slices.Clone(perms)
	}
	return out
}

var templates = map[string][]Permission{
	// viewer reads everything except secrets-adjacent listings.
	"viewer": {
		LexiconsRead, StatsRead, BackfillRead, EventsRead, ScriptsRead, LabelersRead, RecordsRead,
		APIClientsView, DeadLettersRead, LinkedReposRead, PluginsRead, IndexesRead,
	},
	// operator runs the instance day to day: viewer plus lexicons, backfill,
	// scripts, labelers, dead letters, field indexes and record deletion.
	"operator": {
		LexiconsRead, StatsRead, BackfillRead, EventsRead, ScriptsRead, LabelersRead, RecordsRead,
		APIClientsView, DeadLettersRead, LinkedReposRead, PluginsRead, IndexesRead,
		LexiconsCreate, LexiconsDelete, BackfillCreate, ScriptsManage, ScriptVariablesRead, ScriptVariablesCreate,
		LabelersCreate, DeadLettersManage, RecordsDelete, IndexesManage,
	},
	// manager is operator plus API clients, users (without deleting them),
	// API keys, plugins, linked repos and settings.
	"manager": {
		LexiconsRead, StatsRead, BackfillRead, EventsRead, ScriptsRead, LabelersRead, RecordsRead,
		APIClientsView, DeadLettersRead, LinkedReposRead, PluginsRead, IndexesRead,
		LexiconsCreate, LexiconsDelete, BackfillCreate, ScriptsManage, ScriptVariablesRead, ScriptVariablesCreate,
		LabelersCreate, DeadLettersManage, RecordsDelete, IndexesManage,
		ScriptVariablesDelete, LabelersDelete, APIClientsCreate, APIClientsEdit, APIClientsDelete,
		UsersRead, UsersCreate, UsersUpdate, APIKeysRead, APIKeysCreate, APIKeysDelete,
		PluginsCreate, PluginsDelete, LinkedReposCreate, LinkedReposDelete, SettingsManage,
	},
	// full_access holds every permission (but is not the super user).
	"full_access": All(),
}

// Set is a set of permissions.
type Set map[Permission]struct{}

// NewSet builds a set from names, ignoring unknown ones.
func NewSet[S ~string](names []S) Set {
	s := make(Set, len(names))
	for _, n := range names {
		if p := Permission(n); Valid(p) {
			s[p] = struct{}{}
		}
	}
	return s
}

// Has reports whether p is in s.
func (s Set) Has(p Permission) bool { _, ok := s[p]; return ok }

// Intersect returns the permissions in both s and o.
func (s Set) Intersect(o Set) Set {
	out := make(Set, len(s))
	for p := range s {
		if o.Has(p) {
			out[p] = struct{}{}
		}
	}
	return out
}

// Sorted returns the permissions as sorted strings.
func (s Set) Sorted() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, string(p))
	}
	slices.Sort(out)
	return out
}
