package scripts

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// MaxValueSize bounds a variable's value in bytes (64 KiB).
const MaxValueSize = 64 << 10

// keyPattern is a variable key: 1–128 characters of [A-Za-z0-9_.-],
// starting with a letter or an underscore.
var keyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// ValidKey reports whether key is a valid variable key.
func ValidKey(key string) bool { return keyPattern.MatchString(key) }

// purpose is the sealing purpose of the variable key: a sealed value opens
// only under the key it was stored for.
func purpose(key string) string { return "script-variable:" + key }

// Lister is the storage Open needs.
type Lister interface {
	ListScriptVariables(ctx context.Context) ([]storage.ScriptVariable, error)
}

// Open decrypts every stored variable, keyed by name. Variables that do
// not open (sealed with another key, tampered with, or no sealer) are left
// out of the map and named in the returned error, so the caller decides
// whether to run with the rest.
func Open(ctx context.Context, store Lister, sealer *oauth.Sealer) (map[string]string, error) {
	list, err := store.ListScriptVariables(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	var errs []error
	for _, v := range list {
		if sealer == nil {
			errs = append(errs, fmt.Errorf("script variable %q: token encryption is not configured", v.Key))
			continue
		}
		value, err := sealer.OpenString(purpose(v.Key), v.Sealed)
		if err != nil {
			errs = append(errs, fmt.Errorf("script variable %q: %w", v.Key, err))
			continue
		}
		out[v.Key] = value
	}
	return out, errors.Join(errs...)
}

// VarsInvalidator is implemented by a script runtime that caches the
// decrypted variables: InvalidateVars makes its next run read them again.
type VarsInvalidator interface {
	InvalidateVars()
}

// Variables manages script variables: named secrets that Lua scripts read
// through `vars`. Values are sealed at rest (AES-256-GCM, bound to the
// variable's key) and never leave through the service.
type Variables struct {
	store   storage.ScriptStore
	sealer  *oauth.Sealer // nil: token encryption is not configured
	runtime VarsInvalidator
	events  *eventlog.Log
	now     func() time.Time
}

// VariablesOptions configure Variables.
type VariablesOptions struct {
	Store storage.ScriptStore
	// Sealer seals the values; nil: token encryption is not configured,
	// and values cannot be set.
	Sealer *oauth.Sealer
	// Runtime, when it caches the decrypted variables, is told of changes
	// (may be nil).
	Runtime VarsInvalidator
	// Events records the service's actions.
	Events *eventlog.Log
	Now    func() time.Time // default time.Now
}

// NewVariables returns the service.
func NewVariables(opts VariablesOptions) *Variables {
	v := &Variables{store: opts.Store, sealer: opts.Sealer, runtime: opts.Runtime, events: opts.Events, now: opts.Now}
	if v.now == nil {
		v.now = time.Now
	}
	return v
}

// List returns the variables, without their values.
func (v *Variables) List(ctx context.Context) ([]storage.ScriptVariable, error) {
	list, err := v.store.ListScriptVariables(ctx)
	for i := range list {
		list[i].Sealed = ""
	}
	return list, err
}

// Set creates or replaces a variable on behalf of actor; a nil value is
// refused (Invalid).
func (v *Variables) Set(ctx context.Context, actor, key string, value *string) error {
	if v.sealer == nil {
		return fail.New(fail.Unavailable, "token encryption is not configured")
	}
	switch {
	case key == "":
		return fail.New(fail.Invalid, "key is required")
	case !ValidKey(key):
		return fail.New(fail.Invalid, "key must be 1 to 128 characters of letters, digits, _, . and -, starting with a letter or _")
	case value == nil:
		return fail.New(fail.Invalid, "value is required")
	case len(*value) > MaxValueSize:
		return fail.Invalidf("value must be at most %d bytes", MaxValueSize)
	}
	sealed, err := v.sealer.SealString(purpose(key), *value)
	if err != nil {
		return err
	}
	now := v.now()
	// The store keeps the first CreatedAt of an existing key.
	if err := v.store.PutScriptVariable(ctx, storage.ScriptVariable{Key: key, Sealed: sealed, CreatedAt: now, UpdatedAt: now}); err != nil {
		return err
	}
	v.invalidate()
	v.events.Record(ctx, eventlog.Entry{Type: "script_variable.set", ActorDID: actor, Subject: key})
	return nil
}

// Delete removes a variable on behalf of actor.
func (v *Variables) Delete(ctx context.Context, actor, key string) error {
	err := v.store.DeleteScriptVariable(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return fail.New(fail.NotFound, "script variable not found")
	}
	if err != nil {
		return err
	}
	v.invalidate()
	v.events.Record(ctx, eventlog.Entry{Type: "script_variable.deleted", ActorDID: actor, Subject: key})
	return nil
}

// invalidate lets running scripts see a variable change at once.
func (v *Variables) invalidate() {
	if v.runtime != nil {
		v.runtime.InvalidateVars()
	}
}
