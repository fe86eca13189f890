package main

import (
	"path/filepath"
	"testing"
)

// TestClaimCommand: the claim command in the start-up warning is the one
// the reader ran: `go run ./cmd/appview` under go run from the module's
// root (the binary built anew or taken from the build cache), the binary as typed otherwise; a database flag is repeated.
func TestClaimCommand(t *testing.T) {
	goRun := filepath.Join("/tmp", "go-build1156727672", "b001", "exe", "appview")
	// From the second run on, go run starts the binary it cached.
	cached := filepath.Join("/root", ".cache", "go-build", "2f", "2fede1435699bc7f885cc2137f64a6a3c483ef2ac5c3e6ce39cb54cbe8b39521-d", "appview")
	inRoot := func(p string) bool { return p == filepath.Join("cmd", "appview") }
	nowhere := func(string) bool { return false }
	for _, tc := range []struct {
		arg0      string
		exists    func(string) bool
		overrides map[string]string
		want      string
	}{
		{goRun, inRoot, nil, "go run ./cmd/appview admin bootstrap --did <your DID>"},
		{cached, inRoot, nil, "go run ./cmd/appview admin bootstrap --did <your DID>"},
		{"/srv/2f/2fed-d/appview", nowhere, nil, "/srv/2f/2fed-d/appview admin bootstrap --did <your DID>"},
		{goRun, inRoot, map[string]string{"DATABASE_URL": "sqlite://my data/x.db"},
			"go run ./cmd/appview admin bootstrap --database-url 'sqlite://my data/x.db' --did <your DID>"},
		{goRun, nowhere, nil, "go run github.com/lexview/lexview/cmd/appview admin bootstrap --did <your DID>"},
		{"appview", nowhere, nil, "appview admin bootstrap --did <your DID>"},
		{"./appview", inRoot, nil, "./appview admin bootstrap --did <your DID>"},
		{"/usr/local/bin/appview", nowhere, map[string]string{"DATABASE_URL": "postgres://lexview@db/lexview"},
			"/usr/local/bin/appview admin bootstrap --database-url postgres://lexview@db/lexview --did <your DID>"},
		{"/opt/it's here/appview", nowhere, nil, `'/opt/it'\''s here/appview' admin bootstrap --did <your DID>`},
	} {
		if got := claimCommand(program(tc.arg0, tc.exists), tc.overrides); got != tc.want {
			t.Errorf("%s %v:\n got %s\nwant %s", tc.arg0, tc.overrides, got, tc.want)
		}
	}
}
