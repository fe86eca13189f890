package appview

import (
	"context"
	"strings"
	"sync"

	"github.com/lexview/lexview/storage"
)

// ValidationSettingPrefix, followed by a collection NSID, names the
// instance setting that turns record validation off for that collection
// (value "off"). Changes apply through the change feed (changes.go): at
// once with PostgreSQL, within 5 s with SQLite.
const ValidationSettingPrefix = "validation."

// validationToggles caches which collections have validation turned off;
// the writer consults it for every change.
type validationToggles struct {
	store storage.SettingsStore
	mu    sync.RWMutex
	off   map[string]bool
}

func (v *validationToggles) isOff(collection string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.off[collection]
}

func (v *validationToggles) refresh(ctx context.Context) error {
	all, err := v.store.ListSettings(ctx)
	if err != nil {
		return err
	}
	off := map[string]bool{}
	for k, val := range all {
		if c, ok := strings.CutPrefix(k, ValidationSettingPrefix); ok && strings.EqualFold(val, "off") {
			off[c] = true
		}
	}
	v.mu.Lock()
	v.off = off
	v.mu.Unlock()
	return nil
}
