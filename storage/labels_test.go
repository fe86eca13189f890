package storage

import (
	"slices"
	"testing"
)

func TestLabelSubjects(t *testing.T) {
	got := LabelSubjects([]string{"at://did:plc:a/app.x.post/1", "at://did:plc:a/app.x.post/2", "at://did:plc:b/app.x.post/1", "not a uri"})
	want := []string{"at://did:plc:a/app.x.post/1", "did:plc:a", "at://did:plc:a/app.x.post/2", "at://did:plc:b/app.x.post/1", "did:plc:b", "not a uri"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
