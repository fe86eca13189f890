package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestEnvironmentFieldsDocumented: the appview.Config field that
// docs/configuration.md names for each variable (Network.PLCURL, a field
// of a group) exists, and configFromEnv sets it from that variable, and
// from no other.
func TestEnvironmentFieldsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	// | `VAR` | flag | default | `Field.Path` | meaning |
	row := regexp.MustCompile("^\\| `([A-Z_]+)` \\|[^|]*\\|[^|]*\\| `([A-Za-z.]+)` \\|")
	samples := map[string]string{ // values the variables must parse
		"PORT": "4000", "DEFAULT_RATE_LIMIT_CAPACITY": "7", "DEFAULT_RATE_LIMIT_REFILL_RATE": "1.5",
		"EVENT_LOG_RETENTION_DAYS": "9", "ALLOW_PRIVATE_NETWORKS": "true",
	}
	rows := 0
	for line := range strings.Lines(string(doc)) {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		env, path := m[1], m[2]
		if path == "Logger" { // LOG_LEVEL and LOG_FORMAT build the logger (newLogger)
			continue
		}
		value := samples[env]
		if value == "" {
			value = "sample"
		}
		cfg, err := configFromEnv(func(k string) string {
			if k == env {
				return value
			}
			return ""
		})
		if err != nil {
			t.Errorf("%s=%s: %v", env, value, err)
			continue
		}
		field, ok := fieldByPath(reflect.ValueOf(cfg), path)
		if !ok {
			t.Errorf("docs/configuration.md maps %s to %s, which appview.Config does not have", env, path)
			continue
		}
		if field.IsZero() {
			t.Errorf("%s=%s leaves %s unset", env, value, path)
		}
		cfg, _ = configFromEnv(func(string) string { return "" })
		if f, _ := fieldByPath(reflect.ValueOf(cfg), path); !f.IsZero() {
			t.Errorf("%s is set without %s", path, env)
		}
	}
	if rows != len(settings()) {
		t.Errorf("the regexp found %d rows in docs/configuration.md, the command reads %d variables", rows, len(settings()))
	}
}

// fieldByPath follows a dotted field path (Network.PLCURL) in a struct.
func fieldByPath(v reflect.Value, path string) (reflect.Value, bool) {
	for name := range strings.SplitSeq(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		if v = v.FieldByName(name); !v.IsValid() {
			return reflect.Value{}, false
		}
	}
	return v, true
}
