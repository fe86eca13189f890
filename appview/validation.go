package appview

import (
	"strings"
	"sync"

	"github.com/lexview/lexview/appview/internal/core/indexer"
)

// ValidationSettingPrefix is the prefix that, followed by a collection NSID, names the
// instance setting of that collection's validation mode: off (no lexicon
// validation), reject, flag or hide; without it the collection follows
// ValidationModeSetting. A change through this instance applies at once;
// one through another instance through the change feed (changes.go): at
// once with PostgreSQL, within 5 s with SQLite.
const ValidationSettingPrefix = "validation."

// ValidationModeSetting is the instance setting of the validation mode of
// every collection without a mode of its own: reject, flag or hide
// (DefaultValidationMode when unset). ("mode" is no NSID, so the key names
// no collection.)
const ValidationModeSetting = ValidationSettingPrefix + "mode"

// DefaultValidationMode is the validation mode of an instance that sets
// none. hide loses no data (a record its lexicon refuses is stored with
// the error, and a lexicon revision or another mode can bring it back)
// and serves what reject served (the default and scripted queries leave
// such records out unless asked), so neither clients nor scripts see a
// record they did not see before; see docs/ingestion.md#validation. It is
// a value of ValidationModeSetting, an untyped string.
const DefaultValidationMode = "hide"

// validationToggles caches the validation modes; the writer consults it
// for every invalid record, the reads for every query. applySettings keeps
// it in line with the stored settings.
type validationToggles struct {
	mu  sync.RWMutex
	def indexer.Mode
	per map[string]indexer.Mode
}

func newValidationToggles() *validationToggles {
	return &validationToggles{def: indexer.Mode(DefaultValidationMode), per: map[string]indexer.Mode{}}
}

// mode returns collection's validation mode.
func (v *validationToggles) mode(collection string) indexer.Mode {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if m, ok := v.per[collection]; ok {
		return m
	}
	return v.def
}

// hidden reports whether the default and scripted queries of collection
// leave out its flagged records: in the mode hide, and in reject, which
// serves only valid records (a record is flagged there only by a
// re-validation after a lexicon revision, or under an earlier mode).
func (v *validationToggles) hidden(collection string) bool {
	m := v.mode(collection)
	return m == indexer.ModeHide || m == indexer.ModeReject
}

// report returns the mode of the collections without their own, and the
// collections with a mode of their own.
func (v *validationToggles) report() (string, map[string]string) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make(map[string]string, len(v.per))
	for c, m := range v.per {
		out[c] = string(m)
	}
	return string(v.def), out
}

// set reads the modes from every stored setting. A value that names no
// mode (stored by hand, or by a version that knew only off) leaves the
// collection to the instance's mode.
func (v *validationToggles) set(settings map[string]string) {
	def := indexer.Mode(DefaultValidationMode)
	if m, ok := indexer.ParseMode(settings[ValidationModeSetting]); ok && m != indexer.ModeOff {
		def = m
	}
	per := map[string]indexer.Mode{}
	for k, val := range settings {
		c, ok := strings.CutPrefix(k, ValidationSettingPrefix)
		if !ok || k == ValidationModeSetting {
			continue
		}
		if m, ok := indexer.ParseMode(val); ok {
			per[c] = m
		}
	}
	v.mu.Lock()
	v.def, v.per = def, per
	v.mu.Unlock()
}
