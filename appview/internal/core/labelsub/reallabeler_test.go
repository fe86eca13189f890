package labelsub_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/appview/internal/core/labelsub"
	"github.com/lexview/lexview/appview/internal/testing/reflabeler"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestRealLabeler subscribes to @skyware/labeler (reflabeler) with its DID
// in the reference PLC directory: history replayed from 0, live labels,
// a negation, an expiring label, a key rotation and a restart of the
// labeler, each label verified and stored once.
func TestRealLabeler(t *testing.T) {
	t.Parallel()
	reflabeler.Require(t)
	n := refpds.Start(t)
	l := reflabeler.Start(t, n)
	h := newHarness(t, storagetest.SQLite(t))
	base := &identity.BaseDirectory{PLCURL: n.PLCURL, HTTPClient: *http.DefaultClient, SkipHandleVerification: true}
	h.cfg.Directory = identity.NewCacheDirectory(base, 1000, time.Hour, time.Minute, time.Minute)
	subject := post(1)

	first := l.Label(t, subject, "spam")
	h.add(l.DID)
	h.start()
	h.waitCursor(l.DID, first.Seq)
	h.waitCursor(l.DID, l.Negate(t, subject, "spam").Seq)
	h.waitCursor(l.DID, l.LabelExpiring(t, subject, "warn", time.Now().Add(time.Hour)).Seq)
	got := h.labels(subject)
	if len(got) != 1 || got[0].Val != "warn" || got[0].Exp.IsZero() {
		t.Fatalf("labels = %+v, want only the expiring warn", got)
	}

	l.RotateKey(t)
	h.waitCursor(l.DID, l.Label(t, subject, "rotated").Seq)
	l.Restart(t)
	last := l.Label(t, subject, "restarted")
	h.waitCursor(l.DID, last.Seq)
	if got := vals(h.labels(subject)); len(got) != 3 {
		t.Fatalf("labels = %v, want restarted, rotated and warn", got)
	}
	if n := h.refused(l.DID, labelsub.RefusedBadSignature); n != 0 {
		t.Fatalf("%d labels refused for their signature", n)
	}
	h.store.storedOnce(t, l.DID, last.Seq, 5)
}
