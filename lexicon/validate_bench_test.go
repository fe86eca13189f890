package lexicon

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidateRecord compares the fast path with indigo's validator
// on post-like records (plain, with a reply, with facets, with an image).
func BenchmarkValidateRecord(b *testing.B) {
	snap := fastSnapshot(b)
	recs := commonRecords["app.fast.post"]
	sample := []json.RawMessage{json.RawMessage(recs[0]), json.RawMessage(recs[5]), json.RawMessage(recs[6]), json.RawMessage(recs[7])}
	bytes := 0
	for _, r := range sample {
		bytes += len(r)
	}
	for _, path := range []struct {
		name     string
		validate func(string, json.RawMessage) error
	}{{"fast", snap.ValidateRecord}, {"indigo", snap.validateIndigo}} {
		b.Run(path.name, func(b *testing.B) {
			b.SetBytes(int64(bytes / len(sample)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := path.validate("app.fast.post", sample[i%len(sample)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
