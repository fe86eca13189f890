package appview

import (
	"strings"
	"sync"
)

// ValidationSettingPrefix is the prefix that, followed by a collection NSID, names the
// instance setting that turns record validation off for that collection
// (value "off"). A change through this instance applies at once; one
// through another instance through the change feed (changes.go): at once
// with PostgreSQL, within 5 s with SQLite.
const ValidationSettingPrefix = "validation."

// validationToggles caches which collections have validation turned off;
// the writer consults it for every change. applySettings keeps it in line
// with the stored settings.
type validationToggles struct {
	mu  sync.RWMutex
	off map[string]bool
}

func (v *validationToggles) isOff(collection string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.off[collection]
}

// set reads the switches from every stored setting.
func (v *validationToggles) set(settings map[string]string) {
	off := map[string]bool{}
	for k, val := range settings {
		if c, ok := strings.CutPrefix(k, ValidationSettingPrefix); ok && strings.EqualFold(val, "off") {
			off[c] = true
		}
	}
	v.mu.Lock()
	v.off = off
	v.mu.Unlock()
}
