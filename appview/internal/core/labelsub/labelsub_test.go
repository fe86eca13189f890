package labelsub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/labeling"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lexview/lexview/appview/internal/core/labelsub"
	"github.com/lexview/lexview/appview/internal/testing/labelertest"
	"github.com/lexview/lexview/storage"
)

// post is a record subject for labels.
func post(i int) string {
	return fmt.Sprintf("at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/com.example.post/3k%06d", i)
}

// vals lists the values of labels.
func vals(ls []storage.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Val)
	}
	return out
}

func TestBackfillThenLive(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		lab := labelertest.New(t, h.plc, labelertest.Options{K256: true})
		// History from before the labeler was added: replayed from 0.
		lab.Emit(lab.Label(post(1), "spam"))
		lab.Emit(lab.Label(post(1), "rude"), lab.Label(post(2), "spam"))
		h.add(lab.DID)
		h.start()
		h.waitCursor(lab.DID, 2)
		if got := lab.Cursors(); len(got) != 1 || got[0] != 0 {
			t.Fatalf("cursors = %v, want a first connection from 0", got)
		}
		if got := vals(h.labels(post(1))); !slices.Equal(got, []string{"rude", "spam"}) {
			t.Fatalf("post 1 labels = %v", got)
		}
		// Live.
		acct := "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
		seq := lab.Emit(lab.Label(acct, "impersonation"))
		h.waitCursor(lab.DID, seq)
		got := h.labels(acct)
		if len(got) != 1 || got[0].Val != "impersonation" || got[0].Src != lab.DID || len(got[0].Sig) == 0 || got[0].Ver != 1 {
			t.Fatalf("account labels = %+v", got)
		}
		// The metric counts after the commit the cursor shows.
		waitFor(t, "4 labels counted as stored", func() bool {
			return testutil.ToFloat64(h.metrics.LabelsStored.WithLabelValues(lab.DID)) == 4
		})
		if n := testutil.ToFloat64(h.metrics.LabelerConnections.WithLabelValues("connected")); n != 1 {
			t.Fatalf("connected subscriptions = %v, want 1", n)
		}
		if len(h.events.of("labeler.connected", lab.DID)) != 1 {
			t.Fatal("no labeler.connected entry")
		}
	})
}

func TestRefusedLabels(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		other := labelertest.NewDID()
		wrongSrc := lab.Label(post(1), "a")
		wrongSrc.SourceDID = other
		badURI := lab.Label("https://example.com/x", "b")
		future := lab.Label(post(1), "c")
		future.CreatedAt = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		badCts := lab.Label(post(1), "d")
		badCts.CreatedAt = "yesterday"
		unsigned := lab.Label(post(1), "e")
		badVersion := lab.Label(post(1), "f")
		badVersion.Version = 2
		good := lab.Label(post(1), "good")
		lab.Emit(wrongSrc, badURI, future, badCts, badVersion, good)
		lab.EmitSigned(unsigned)
		seq := lab.EmitBadSig(lab.Label(post(1), "forged"))
		h.waitCursor(lab.DID, seq)
		if got := vals(h.labels(post(1))); !slices.Equal(got, []string{"good"}) {
			t.Fatalf("labels = %v, want only the good one", got)
		}
		for _, reason := range []string{labelsub.RefusedWrongSrc, labelsub.RefusedBadURI, labelsub.RefusedFutureCts,
			labelsub.RefusedBadCts, labelsub.RefusedUnsigned, labelsub.RefusedBadVersion, labelsub.RefusedBadSignature} {
			if n := h.refused(lab.DID, reason); n != 1 {
				t.Errorf("refused %s = %d, want 1", reason, n)
			}
		}
		// Counted by reason in the event log, without flooding it: the
		// first refusal is recorded at once, the rest summed on stop.
		h.stop()
		entries := h.events.of("labeler.refused_labels", lab.DID)
		total := 0
		for _, e := range entries {
			for _, n := range e.Detail.(map[string]any)["refused"].(map[string]int) {
				total += n
			}
		}
		if len(entries) != 2 || total != 7 || entries[0].Severity != "warn" {
			t.Fatalf("refused_labels entries = %+v", entries)
		}
	})
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "before")))
		// The cached document has the old key; the first label signed with
		// the new one makes the subscription re-resolve once.
		lab.RotateKey(t)
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "after")))
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "again")))
		if got := vals(h.labels(post(1))); !slices.Equal(got, []string{"after", "again", "before"}) {
			t.Fatalf("labels = %v", got)
		}
		if n := h.refused(lab.DID, labelsub.RefusedBadSignature); n != 0 {
			t.Fatalf("refused %d labels after the rotation", n)
		}
		// A forged label still fails, and does not re-resolve again within
		// the rate limit: it is refused.
		h.waitCursor(lab.DID, lab.EmitBadSig(lab.Label(post(1), "forged")))
		if n := h.refused(lab.DID, labelsub.RefusedBadSignature); n != 1 {
			t.Fatalf("refused %d forged labels, want 1", n)
		}
	})
}

func TestNegationAndExpiry(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		base := time.Now().Add(-time.Minute)
		l := lab.Label(post(1), "spam")
		l.CreatedAt = base.Format(time.RFC3339Nano)
		h.waitCursor(lab.DID, lab.Emit(l))
		if len(h.labels(post(1))) != 1 {
			t.Fatal("label not stored")
		}
		neg := lab.Label(post(1), "spam")
		neg.CreatedAt = base.Add(time.Second).Format(time.RFC3339Nano)
		yes := true
		neg.Negated = &yes
		h.waitCursor(lab.DID, lab.Emit(neg))
		if got := h.labels(post(1)); len(got) != 0 {
			t.Fatalf("negated label still applies: %+v", got)
		}
		// An expiring label, its times given in another zone: stored in UTC,
		// applying until exp.
		zone := time.FixedZone("UTC+2", 2*3600)
		exp := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		e := lab.Label(post(2), "temporary")
		e.CreatedAt = time.Now().In(zone).Format("2006-01-02T15:04:05.000-07:00")
		expS := exp.In(zone).Format("2006-01-02T15:04:05.000-07:00")
		e.ExpiresAt = &expS
		h.waitCursor(lab.DID, lab.Emit(e))
		got := h.labels(post(2))
		if len(got) != 1 || !got[0].Exp.Equal(exp) || got[0].Exp.Location() != time.UTC || got[0].Cts.Location() != time.UTC {
			t.Fatalf("expiring label = %+v, want exp %v in UTC", got, exp)
		}
		if got := h.labelsAt(post(2), exp.Add(time.Second)); len(got) != 0 {
			t.Fatalf("expired label still applies: %+v", got)
		}
	})
}

func TestRestartResumesFromCursor(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		lab := labelertest.New(t, h.plc, labelertest.Options{})
		for i := range 5 {
			lab.Emit(lab.Label(post(i), "spam"))
		}
		h.add(lab.DID)
		h.start()
		h.waitCursor(lab.DID, 5)
		h.stop()
		for i := 5; i < 10; i++ {
			lab.Emit(lab.Label(post(i), "spam"))
		}
		h.start()
		h.waitCursor(lab.DID, 10)
		if got := lab.Cursors(); !slices.Equal(got, []int64{0, 5}) {
			t.Fatalf("cursors = %v, want [0 5]", got)
		}
		h.store.storedOnce(t, lab.DID, 10, 10)
		h.requireOneLabelEach(10)
	})
}

func TestPauseResumeDelete(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		h.setStatus(lab.DID, storage.LabelerPaused)
		waitFor(t, "the connection to close", func() bool { return lab.Open() == 0 && len(h.m.Running()) == 0 })
		lab.Emit(lab.Label(post(2), "two"))
		// Give a wrongly kept connection time to store it.
		time.Sleep(50 * time.Millisecond)
		if len(h.labels(post(2))) != 0 || h.cursor(lab.DID) != 1 {
			t.Fatal("a paused labeler's labels were stored")
		}
		h.setStatus(lab.DID, storage.LabelerActive)
		h.waitCursor(lab.DID, 2)
		if got := lab.Cursors(); got[len(got)-1] != 1 {
			t.Fatalf("resumed from cursor %d, want 1", got[len(got)-1])
		}
		// Delete: the connection closes and the labels go.
		if err := h.store.DeleteLabeler(context.Background(), lab.DID); err != nil {
			t.Fatal(err)
		}
		h.m.Changed(lab.DID)
		waitFor(t, "the connection to close", func() bool { return lab.Open() == 0 && len(h.m.Running()) == 0 })
		if len(h.labels(post(1))) != 0 {
			t.Fatal("a deleted labeler's labels remain")
		}
		conns := len(lab.Cursors())
		time.Sleep(50 * time.Millisecond)
		if len(lab.Cursors()) != conns {
			t.Fatal("a deleted labeler was connected again")
		}
	})
}

func TestDeletedWhileStreaming(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		// Deleted through another instance (no Changed): the next event
		// finds no labeler, and the subscription ends.
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		if err := h.store.DeleteLabeler(context.Background(), lab.DID); err != nil {
			t.Fatal(err)
		}
		lab.Emit(lab.Label(post(2), "two"))
		waitFor(t, "the subscription to end", func() bool { return lab.Open() == 0 })
		if len(h.labels(post(2))) != 0 {
			t.Fatal("a label of a deleted labeler was stored")
		}
	})
}

func TestDropAndErrorFrames(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		lab.Drop()
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(2), "two")))
		// An error frame mid-stream ends the connection; the next one
		// continues from the cursor.
		lab.EmitError("ConsumerTooSlow", "slow down")
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(3), "three")))
		got := lab.Cursors()
		if !slices.Equal(got, []int64{0, 1, 2}) {
			t.Fatalf("cursors = %v, want [0 1 2]", got)
		}
		entries := h.events.of("labeler.disconnected", lab.DID)
		if len(entries) == 0 || entries[0].Severity != "warn" {
			t.Fatalf("disconnected entries = %+v", entries)
		}
		// Refused connections: error frames at once, retried with backoff;
		// the entries are rate-limited.
		lab.Refuse("Maintenance", "down for maintenance")
		lab.Drop()
		waitFor(t, "retries", func() bool { return len(lab.Cursors()) >= 6 })
		if n := len(h.events.of("labeler.disconnected", lab.DID)); n != 1 {
			t.Fatalf("%d disconnected entries, want 1 (rate-limited)", n)
		}
		lab.Refuse("", "")
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(4), "four")))
		h.store.storedOnce(t, lab.DID, 4, 4)
	})
}

func TestMalformedAndOversizedFrames(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.cfg.MaxFrame = 4096
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		lab.EmitFrame([]byte{0xff, 0x00, 0x13})                                   // not CBOR
		lab.EmitFrame(labelertest.Header(1, "#labels"))                           // no body
		lab.EmitFrame(append(labelertest.Header(1, "#labels"), 0xa1, 0x61, 0x78)) // truncated body
		lab.EmitFrame(labelertest.Header(7, ""))                                  // unknown op
		lab.EmitText("hello")                                                     // not binary
		lab.EmitFrame(labelertest.InfoFrame("OutdatedCursor", "fine"))            // info: logged
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(2), "two")))
		if n := h.refused(lab.DID, labelsub.RefusedMalformed); n != 5 {
			t.Fatalf("malformed frames counted = %d, want 5", n)
		}
		if len(lab.Cursors()) != 1 {
			t.Fatal("a malformed frame ended the connection")
		}
	})
}

// TestOversizedFrameIsSkipped: a frame over the limit, which the labeler
// replays from its log on every connection, is skipped (counted, logged,
// recorded with its sequence number) and the cursor moves past it, on the
// same connection; the labels after it are stored. Through
// Manager.SetMaxFrame the limit rises for later connections, and the same
// frame is then kept.
func TestOversizedFrameIsSkipped(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.cfg.MaxFrame = 4096
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		big := lab.Label(post(3), "big")
		huge := strings.Repeat("x", 8192)
		big.CID = &huge
		bigSeq := lab.Emit(big)
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(4), "four")))
		if n := h.refused(lab.DID, labelsub.RefusedOversized); n != 1 {
			t.Fatalf("oversized frames counted = %d, want 1", n)
		}
		if len(h.labels(post(3))) != 0 || len(h.labels(post(4))) != 1 {
			t.Fatal("wrong labels after the oversized frame")
		}
		if c := lab.Cursors(); len(c) != 1 {
			t.Fatalf("connections from cursors %v: the oversized frame ended one", c)
		}
		skipped := h.events.of("labeler.frame_skipped", lab.DID)
		if len(skipped) != 1 || skipped[0].Detail.(map[string]any)["seq"] != bigSeq || skipped[0].Severity != "warn" {
			t.Fatalf("frame_skipped entries: %+v", skipped)
		}
	})
}

// TestMaxFrameRaised: Manager.SetMaxFrame raises the limit over
// Options.MaxFrame, and a frame under it is kept.
func TestMaxFrameRaised(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.cfg.MaxFrame = 4096
		h.start()
		h.m.SetMaxFrame(64 << 10)
		lab := h.labeler(labelertest.Options{})
		var many []labeling.Label // about 200 bytes each
		for i := range 60 {
			many = append(many, lab.Label(post(100+i), "many"))
		}
		if n := len(labelertest.LabelsFrame(1, many)); n <= 4096 {
			t.Fatalf("the frame is only %d bytes", n)
		}
		h.waitCursor(lab.DID, lab.Emit(many...))
		if len(h.labels(post(159))) != 1 || h.refused(lab.DID, labelsub.RefusedOversized) != 0 {
			t.Fatal("the frame under the raised limit was not kept")
		}
	})
}

func TestBrokenLabelerDoesNotAffectOthers(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		good := h.labeler(labelertest.Options{})
		refusing := h.labeler(labelertest.Options{})
		refusing.Refuse("Broken", "always")
		failing := h.labeler(labelertest.Options{})
		h.store.mu.Lock()
		h.store.fail = map[string]error{failing.DID: errors.New("disk on fire")}
		h.store.mu.Unlock()
		unknown := labelertest.NewDID() // not in the PLC
		h.add(unknown)
		noService := labelertest.NewDID()
		h.plc.Register(noService, "nolabeler.test", "http://127.0.0.1:1")
		h.add(noService)
		failing.Emit(failing.Label(post(1), "x"))
		for i := range 20 {
			good.Emit(good.Label(post(i), "ok"))
		}
		h.waitCursor(good.DID, 20)
		for _, did := range []string{unknown, noService} {
			waitFor(t, "resolve_failed "+did, func() bool { return len(h.events.of("labeler.resolve_failed", did)) == 1 })
		}
		e := h.events.of("labeler.resolve_failed", noService)[0]
		if !strings.Contains(e.Detail.(map[string]any)["error"].(string), "#atproto_labeler") {
			t.Fatalf("resolve_failed detail = %v", e.Detail)
		}
		waitFor(t, "the failing store to be retried", func() bool { return len(failing.Cursors()) >= 2 })
		if h.cursor(failing.DID) != -1 || h.cursor(refusing.DID) != -1 {
			t.Fatal("a broken labeler stored a cursor")
		}
	})
}

func TestReplayedEventsSkipped(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		// A labeler replaying events at or below the cursor: they are
		// skipped, never stored twice.
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		replayed := lab.Label(post(9), "replayed")
		if err := replayed.Sign(lab.Key()); err != nil {
			t.Fatal(err)
		}
		lab.EmitFrame(labelertest.LabelsFrame(1, []labeling.Label{replayed}))
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(2), "two")))
		h.store.storedOnce(t, lab.DID, 2, 2)
	})
}

func TestDeadConnectionReopened(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		// A labeler that stops answering pings (a dead peer) is connected
		// to again; one that answers them stays connected while silent.
		h := newHarness(t, open(t))
		// A pong must come within one ping: long enough that a live
		// stand-in answers in time on a loaded machine (100 ms did not,
		// about once in ten full runs), short enough to keep the test fast.
		const ping = 400 * time.Millisecond
		h.cfg.Ping = ping
		h.start()
		live := h.labeler(labelertest.Options{})
		dead := labelertest.New(t, h.plc, labelertest.Options{})
		dead.Deaf(true)
		h.add(dead.DID)
		h.waitCursor(dead.DID, dead.Emit(dead.Label(post(1), "one")))
		// The deaf labeler may be given up on before its label is stored
		// (a reconnection from 0); the reconnections after it resume from 1.
		waitFor(t, "a reconnection from the stored cursor", func() bool {
			c := dead.Cursors()
			return len(c) >= 2 && c[len(c)-1] == 1
		})
		if got := dead.Cursors(); got[0] != 0 {
			t.Fatalf("cursors = %v, want the first from 0", got)
		}
		time.Sleep(5 * ping)
		if n := len(live.Cursors()); n != 1 {
			t.Fatalf("an idle live connection was reopened (%d connections)", n)
		}
	})
}

func TestSameLabelTwiceInOneEvent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		// One event carrying a label and its negation (and a label twice):
		// the latest by cts wins, as across events.
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		base := time.Now().Add(-time.Minute)
		at := func(l labeling.Label, d time.Duration) labeling.Label {
			l.CreatedAt = base.Add(d).UTC().Format(time.RFC3339Nano)
			return l
		}
		yes := true
		neg := at(lab.Label(post(1), "spam"), time.Second)
		neg.Negated = &yes
		h.waitCursor(lab.DID, lab.Emit(at(lab.Label(post(1), "spam"), 0), neg,
			at(lab.Label(post(2), "rude"), 0), at(lab.Label(post(2), "rude"), time.Second)))
		if got := h.labels(post(1)); len(got) != 0 {
			t.Fatalf("negated in the same event, still applies: %+v", got)
		}
		got := h.labels(post(2))
		if len(got) != 1 || got[0].Cts.Sub(base.Add(time.Second)).Abs() > time.Millisecond {
			t.Fatalf("labels of post 2 = %+v", got)
		}
	})
}

func TestBackfillCoalescesEvents(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		// A long history replayed to a store slower than the stream: the
		// events waiting are stored several to a transaction, each label
		// once, the cursor ending at the last event.
		h := newHarness(t, open(t))
		h.store.delay = 2 * time.Millisecond
		lab := labelertest.New(t, h.plc, labelertest.Options{})
		for i := range 200 {
			lab.Emit(lab.Label(post(i), "spam"))
		}
		h.add(lab.DID)
		h.start()
		h.waitCursor(lab.DID, 200)
		h.store.storedOnce(t, lab.DID, 200, 200)
		if n := h.store.transactions(lab.DID); n >= 200 {
			t.Fatalf("%d transactions for 200 queued events", n)
		}
		h.requireOneLabelEach(200)
	})
}

func TestSequenceGaps(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, open func(testing.TB) storage.LabelStore) {
		h := newHarness(t, open(t))
		h.start()
		lab := h.labeler(labelertest.Options{})
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(1), "one")))
		// An event the live connection misses (as @skyware/labeler loses
		// those created while a subscriber connects): the next one shows
		// the gap, and connecting again from the cursor replays it.
		lab.EmitMissed(lab.Label(post(2), "two"))
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(3), "three")))
		if got := lab.Cursors(); !slices.Equal(got, []int64{0, 1}) {
			t.Fatalf("cursors = %v, want [0 1]", got)
		}
		h.store.storedOnce(t, lab.DID, 3, 3)
		if len(h.labels(post(2))) != 1 {
			t.Fatal("the missed label was not recovered")
		}
		// A gap of the labeler's own (sequence numbers it never used):
		// one more connection, then the event is taken.
		lab.SkipSeq(5)
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(4), "four")))
		h.waitCursor(lab.DID, lab.Emit(lab.Label(post(5), "five")))
		if got := lab.Cursors(); !slices.Equal(got, []int64{0, 1, 3}) {
			t.Fatalf("cursors = %v, want [0 1 3]", got)
		}
		h.store.storedOnce(t, lab.DID, 10, 5)
	})
}
