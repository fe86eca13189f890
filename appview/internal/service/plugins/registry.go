package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxIndexSize bounds the registry index.
const maxIndexSize = 4 << 20

// Release is one published version of a registry plugin.
type Release struct {
	Version     string `json:"version"`
	ManifestURL string `json:"manifest_url"`
	SHA256      string `json:"sha256,omitempty"`
}

// Listing is one plugin of the registry index (docs/plugins.md).
type Listing struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Description   string    `json:"description"`
	IconURL       string    `json:"icon_url"`
	LatestVersion string    `json:"latest_version"`
	ManifestURL   string    `json:"manifest_url"`
	Releases      []Release `json:"releases,omitempty"`
}

// Index is the registry index document.
type Index struct {
	Plugins []Listing `json:"plugins"`
}

// registry caches the index at its URL.
type registry struct {
	fetch fetcher
	now   func() time.Time

	mu          sync.Mutex
	url         string // "" for none
	index       Index
	refreshedAt time.Time
}

// setURL changes the registry's URL ("" for none). A new URL forgets the
// index of the old one: the next Official fetches it.
func (r *registry) setURL(u string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u != r.url {
		r.url, r.index, r.refreshedAt = u, Index{}, time.Time{}
	}
}

// current returns the registry's URL, "" for none.
func (r *registry) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// refresh fetches the index; the cache keeps the last good one on error.
// An index fetched while the URL changed is dropped.
func (r *registry) refresh(ctx context.Context) error {
	url := r.current()
	if url == "" {
		return nil
	}
	raw, err := r.fetch.get(ctx, url, maxIndexSize)
	if err != nil {
		return fmt.Errorf("plugin registry: %w", err)
	}
	var idx Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("plugin registry: the index is not valid: %w", err)
	}
	kept := idx.Plugins[:0]
	for _, l := range idx.Plugins {
		if idPattern.MatchString(l.ID) && l.ManifestURL != "" {
			kept = append(kept, l)
		}
	}
	idx.Plugins = kept
	r.mu.Lock()
	if r.url == url {
		r.index, r.refreshedAt = idx, r.now()
	}
	r.mu.Unlock()
	return nil
}

// snapshot returns the cached index and when it was fetched (zero: never).
func (r *registry) snapshot() (Index, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index, r.refreshedAt
}

// listing returns the registry's entry for id.
func (r *registry) listing(id string) (Listing, bool) {
	idx, _ := r.snapshot()
	for _, l := range idx.Plugins {
		if l.ID == id {
			return l, true
		}
	}
	return Listing{}, false
}

// updateInfo compares an installed version with the registry's entry:
// whether the latest is newer, the latest, and the releases newer than
// installed, oldest first.
func updateInfo(installed string, l Listing, found bool) (bool, string, []string) {
	if !found {
		return false, installed, []string{}
	}
	pending := []string{}
	for _, rel := range l.Releases {
		if compareVersions(rel.Version, installed) > 0 && !slices.Contains(pending, rel.Version) {
			pending = append(pending, rel.Version)
		}
	}
	slices.SortFunc(pending, compareVersions)
	latest := l.LatestVersion
	if latest == "" && len(pending) > 0 {
		latest = pending[len(pending)-1]
	}
	if latest == "" {
		latest = installed
	}
	return compareVersions(latest, installed) > 0, latest, pending
}

// compareVersions orders dotted versions ("1.10.0" after "1.9.2"), with a
// leading v ignored and a pre-release (after -) before its release.
// Non-numeric parts compare as text.
func compareVersions(a, b string) int {
	a, b = strings.TrimPrefix(a, "v"), strings.TrimPrefix(b, "v")
	ac, apre, _ := strings.Cut(a, "-")
	bc, bpre, _ := strings.Cut(b, "-")
	ap, bp := strings.Split(ac, "."), strings.Split(bc, ".")
	for i := range max(len(ap), len(bp)) {
		x, y := "0", "0"
		if i < len(ap) {
			x = ap[i]
		}
		if i < len(bp) {
			y = bp[i]
		}
		xn, xerr := strconv.Atoi(x)
		yn, yerr := strconv.Atoi(y)
		var c int
		if xerr == nil && yerr == nil {
			c = xn - yn
		} else {
			c = strings.Compare(x, y)
		}
		if c != 0 {
			return c
		}
	}
	switch {
	case apre == bpre:
		return 0
	case apre == "":
		return 1
	case bpre == "":
		return -1
	}
	return strings.Compare(apre, bpre)
}
