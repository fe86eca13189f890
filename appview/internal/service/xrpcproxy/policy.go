// Package xrpcproxy forwards XRPC calls for NSIDs that have no local
// lexicon to the service the NSID's authority designates (resolved by DNS,
// lexresolve), within the policy an admin sets through
// /admin/settings/xrpc-proxy.
package xrpcproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// The policy modes.
const (
	ModeDisabled  = "disabled"  // nothing is forwarded
	ModeOpen      = "open"      // every NSID is forwarded (the default)
	ModeAllowlist = "allowlist" // only NSIDs matching a pattern
	ModeBlocklist = "blocklist" // every NSID but those matching a pattern
)

// SettingKey is the setting the policy is stored under (reserved: the
// generic settings endpoints refuse it).
const SettingKey = "xrpc-proxy"

// maxPatterns bounds a policy's pattern list.
const maxPatterns = 1000

// policyRefresh is how long a read policy is reused (changes made through
// another instance sharing the database take this long to apply here).
const policyRefresh = 5 * time.Second

// Policy says which NSIDs are forwarded. A pattern is an NSID (exact) or
// an NSID prefix followed by ".*" (every NSID under it: "com.example.*"
// matches com.example.feed.get, not com.example itself).
type Policy struct {
	Mode     string   `json:"mode"`
	Patterns []string `json:"patterns"`
}

// DefaultPolicy forwards everything, as the specification's reference
// behaviour does.
func DefaultPolicy() Policy { return Policy{Mode: ModeOpen, Patterns: []string{}} }

// Check refuses (Invalid) a policy that cannot be stored.
func (p Policy) Check() error {
	switch p.Mode {
	case ModeDisabled, ModeOpen, ModeAllowlist, ModeBlocklist:
	default:
		return fail.Invalidf("mode must be one of %s, %s, %s, %s", ModeDisabled, ModeOpen, ModeAllowlist, ModeBlocklist)
	}
	if len(p.Patterns) > maxPatterns {
		return fail.Invalidf("at most %d patterns", maxPatterns)
	}
	for _, pat := range p.Patterns {
		if err := checkPattern(pat); err != nil {
			return err
		}
	}
	return nil
}

func checkPattern(pat string) error {
	if pat == "*" {
		return fail.New(fail.Invalid, `pattern "*" alone is refused: use mode "open" to forward everything`)
	}
	if prefix, ok := strings.CutSuffix(pat, ".*"); ok {
		// A prefix is NSID segments: check it as an NSID with a name added.
		if !strings.Contains(prefix, ".") || lexicon.CheckNSID(prefix+".x") != nil {
			return fail.Invalidf("invalid pattern %q: use an NSID or an NSID prefix of at least two segments followed by .*", clip(pat))
		}
		return nil
	}
	if lexicon.CheckNSID(pat) != nil {
		return fail.Invalidf("invalid pattern %q: use an NSID or an NSID prefix followed by .*", clip(pat))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// matches reports whether nsid matches one of the patterns.
func (p Policy) matches(nsid string) bool {
	for _, pat := range p.Patterns {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			if strings.HasPrefix(nsid, prefix) {
				return true
			}
		} else if nsid == pat {
			return true
		}
	}
	return false
}

// Allows reports whether the policy forwards nsid.
func (p Policy) Allows(nsid string) bool {
	switch p.Mode {
	case ModeOpen:
		return true
	case ModeAllowlist:
		return p.matches(nsid)
	case ModeBlocklist:
		return !p.matches(nsid)
	}
	return false
}

// Policies reads and writes the stored policy.
type Policies struct {
	store  storage.SettingsStore
	events *eventlog.Log
	now    func() time.Time

	mu      sync.Mutex
	cached  Policy
	expires time.Time
}

// PoliciesOptions configures NewPolicies.
type PoliciesOptions struct {
	// Store holds the policy (a setting).
	Store storage.SettingsStore
	// Events records the audit entry of a change.
	Events *eventlog.Log
	// Now is the clock of the policy's cache; time.Now when nil.
	Now func() time.Time
}

// NewPolicies returns the policy service.
func NewPolicies(opts PoliciesOptions) *Policies {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Policies{store: opts.Store, events: opts.Events, now: opts.Now}
}

// Get returns the policy in force (DefaultPolicy when none is stored).
func (s *Policies) Get(ctx context.Context) (Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().Before(s.expires) {
		return s.cached, nil
	}
	p := DefaultPolicy()
	raw, err := s.store.GetSetting(ctx, SettingKey)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return Policy{}, err
	default:
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return Policy{}, fmt.Errorf("stored xrpc proxy policy: %w", err)
		}
		if p.Patterns == nil {
			p.Patterns = []string{}
		}
	}
	s.cached, s.expires = p, s.now().Add(policyRefresh)
	return p, nil
}

// Put checks and stores a policy on behalf of actor (settings.xrpc_proxy
// in the event log); it applies at once on this instance.
func (s *Policies) Put(ctx context.Context, actor string, p Policy) error {
	if p.Patterns == nil {
		p.Patterns = []string{}
	}
	if err := p.Check(); err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := s.store.PutSetting(ctx, SettingKey, string(raw)); err != nil {
		return err
	}
	s.mu.Lock()
	s.cached, s.expires = p, s.now().Add(policyRefresh)
	s.mu.Unlock()
	s.events.Record(ctx, eventlog.Entry{Type: "settings.xrpc_proxy", ActorDID: actor, Subject: SettingKey,
		Detail: map[string]any{"mode": p.Mode, "patterns": p.Patterns}})
	return nil
}

// Invalidate makes the next Get read the stored policy again, for a change
// made by another instance sharing the database.
func (s *Policies) Invalidate() {
	s.mu.Lock()
	s.expires = time.Time{}
	s.mu.Unlock()
}
