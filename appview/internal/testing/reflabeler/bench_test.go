package reflabeler_test

import (
	"testing"

	"github.com/lexview/lexview/appview/internal/testing/reflabeler"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
)

// BenchmarkStart measures Start on a warm cache: a node process up on
// loopback and its DID registered, one reference PDS network for all.
//
//	go test -run '^$' -bench Start -benchtime 5x ./appview/internal/testing/reflabeler/
func BenchmarkStart(b *testing.B) {
	reflabeler.Require(b)
	n := refpds.Start(b)
	for b.Loop() {
		l := reflabeler.Start(b, n)
		l.Stop()
	}
}

// BenchmarkEmit measures emitting one label (createLabel: signed, stored in
// SQLite, sent to subscribers) through the stdin channel.
func BenchmarkEmit(b *testing.B) {
	reflabeler.Require(b)
	l := reflabeler.Start(b, refpds.Start(b))
	for b.Loop() {
		l.Label(b, "did:plc:ewvi7nxzyoun6zhxrhs64oiz", "bench")
	}
}
