package repocar_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/lexview/lexview/internal/repocar"
)

// TestRecordCID: the CIDs of atproto's data model fixtures
// (testdata/data-model-fixtures.json, from the atproto interop test files
// as indigo's atdata package carries them): strings, numbers, links,
// bytes, blobs, nesting.
func TestRecordCID(t *testing.T) {
	raw, err := os.ReadFile("testdata/data-model-fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []struct {
		JSON json.RawMessage `json:"json"`
		CID  string          `json:"cid"`
	}
	if err := json.Unmarshal(raw, &fixtures); err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no fixtures")
	}
	for i, f := range fixtures {
		got, err := repocar.RecordCID(f.JSON)
		if err != nil {
			t.Errorf("fixture %d: %v", i, err)
			continue
		}
		if got != f.CID {
			t.Errorf("fixture %d: RecordCID = %s, want %s", i, got, f.CID)
		}
	}
	if _, err := repocar.RecordCID([]byte(`[1]`)); err == nil {
		t.Error("a JSON array has a CID")
	}
}
