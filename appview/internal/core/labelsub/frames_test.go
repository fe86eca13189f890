package labelsub

import (
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/labeling"

	"github.com/lexview/lexview/appview/internal/testing/labelertest"
)

// FuzzDecodeFrame checks that no frame makes the decoder or the label
// checks panic, and that a decoded #labels frame's labels are either
// refused or well-formed.
func FuzzDecodeFrame(f *testing.F) {
	key, err := atcrypto.GeneratePrivateKeyP256()
	if err != nil {
		f.Fatal(err)
	}
	l := labeling.Label{SourceDID: "did:plc:ewvi7nxzyoun6zhxrhs64oiz", URI: "did:plc:ewvi7nxzyoun6zhxrhs64oiz", Val: "spam",
		Version: 1, CreatedAt: "2026-01-02T03:04:05.678Z"}
	if err := l.Sign(key); err != nil {
		f.Fatal(err)
	}
	f.Add(labelertest.LabelsFrame(7, []labeling.Label{l}))
	f.Add(labelertest.InfoFrame("OutdatedCursor", "x"))
	f.Add(labelertest.ErrorFrame("FutureCursor", "x"))
	f.Add(labelertest.Header(1, "#labels"))
	f.Add([]byte{0xa2, 0x61, 0x74})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err != nil || fr.labels == nil {
			return
		}
		for _, l := range fr.labels.Labels {
			_, out, reason := checkLabel(l, "did:plc:ewvi7nxzyoun6zhxrhs64oiz", now, time.Minute)
			if reason == "" && (out.Val == "" || out.Cts.Location() != time.UTC || len(out.Sig) == 0) {
				t.Fatalf("accepted a malformed label: %+v", out)
			}
		}
	})
}
