package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunLabels runs the labeler suite (LabelStore) against stores made by
// open. Each subtest gets a fresh store. RunAll runs it with the other
// suites.
func RunLabels(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"PutCreatesThenReactivates", testLabelerPut},
		{"StatusKeepsCursorAndUnknownIsNotFound", testLabelerStatus},
		{"ListOldestFirst", testLabelerList},
		{"LabelRoundTrip", testLabelRoundTrip},
		{"CursorStoredWithLabels", testLabelCursor},
		{"NewerWinsOlderReplayIgnored", testLabelNewerWins},
		{"NegationThenOlderLabel", testLabelNegation},
		{"ExpiredLabelsDoNotApply", testLabelExpiry},
		{"LabelsForOrderAndAbsentSubjects", testLabelsForOrder},
		{"BatchRepeatsAKey", testLabelBatchRepeats},
		{"LargeBatch", testLabelLargeBatch},
		{"DeleteRemovesOnlyItsLabels", testLabelerDelete},
		{"ApplyForDeletedLabelerStoresNothing", testLabelApplyDeleted},
	}
	runCases(t, open, tests)
}

const (
	labelerA = "did:plc:labelera"
	labelerB = "did:plc:labelerb"
	labelURI = "at://did:plc:alice/app.bsky.feed.post/3kabc"
)

// lbl is a signed label from src on uri with value val created at cts.
func lbl(src, uri, val string, cts time.Time) storage.Label {
	return storage.Label{Src: src, URI: uri, Val: val, Cts: cts, Sig: []byte("sig:" + val), Ver: 1}
}

func putLabelerT(t *testing.T, s storage.Store, did string, at time.Time) {
	t.Helper()
	if _, err := s.PutLabeler(context.Background(), did, at); err != nil {
		t.Fatalf("PutLabeler %s: %v", did, err)
	}
}

func applyLabelsT(t *testing.T, s storage.Store, src string, cursor int64, labels ...storage.Label) {
	t.Helper()
	if err := s.ApplyLabels(context.Background(), storage.LabelBatch{Src: src, Labels: labels, Cursor: cursor}); err != nil {
		t.Fatalf("ApplyLabels %s @%d: %v", src, cursor, err)
	}
}

func getLabelerT(t *testing.T, s storage.Store, did string) storage.Labeler {
	t.Helper()
	l, err := s.GetLabeler(context.Background(), did)
	if err != nil {
		t.Fatalf("GetLabeler %s: %v", did, err)
	}
	return l
}

// labelsAt is LabelsFor(subjects, now) that fails the test on error.
func labelsAt(t *testing.T, s storage.Store, now time.Time, subjects ...string) map[string][]storage.Label {
	t.Helper()
	got, err := s.LabelsFor(context.Background(), subjects, now)
	if err != nil {
		t.Fatalf("LabelsFor %v: %v", subjects, err)
	}
	return got
}

// vals lists a subject's labels as "src val" strings, in the order given.
func vals(labels []storage.Label) []string {
	out := []string{}
	for _, l := range labels {
		out = append(out, l.Src+" "+l.Val)
	}
	return out
}

func cursorOf(l storage.Labeler) string {
	if l.Cursor == nil {
		return "nil"
	}
	return fmt.Sprint(*l.Cursor)
}

// testLabelerPut: the first PutLabeler creates an active labeler without a
// cursor; a later one re-activates it, keeping its cursor, labels and
// creation time.
func testLabelerPut(t *testing.T, s storage.Store) {
	ctx := context.Background()
	created, err := s.PutLabeler(ctx, labelerA, base)
	if err != nil || !created {
		t.Fatalf("first PutLabeler: created=%v %v", created, err)
	}
	l := getLabelerT(t, s, labelerA)
	if l.DID != labelerA || l.Status != storage.LabelerActive || l.Cursor != nil || !l.CreatedAt.Equal(base) || !l.UpdatedAt.Equal(base) {
		t.Fatalf("created: %+v", l)
	}
	applyLabelsT(t, s, labelerA, 7, lbl(labelerA, labelURI, "spam", base))
	if err := s.SetLabelerStatus(ctx, labelerA, storage.LabelerPaused, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := base.Add(time.Hour)
	created, err = s.PutLabeler(ctx, labelerA, later)
	if err != nil || created {
		t.Fatalf("second PutLabeler: created=%v %v", created, err)
	}
	l = getLabelerT(t, s, labelerA)
	if l.Status != storage.LabelerActive || cursorOf(l) != "7" || !l.CreatedAt.Equal(base) || !l.UpdatedAt.Equal(later) {
		t.Fatalf("re-activated: %+v (cursor %s)", l, cursorOf(l))
	}
	if got := labelsAt(t, s, base, labelURI); len(got[labelURI]) != 1 {
		t.Fatalf("labels after re-activation: %v", got)
	}
	// Adding an active one again changes nothing but its update time.
	if created, err := s.PutLabeler(ctx, labelerA, later.Add(time.Hour)); err != nil || created {
		t.Fatalf("PutLabeler of an active labeler: created=%v %v", created, err)
	}
	if l := getLabelerT(t, s, labelerA); l.Status != storage.LabelerActive || cursorOf(l) != "7" {
		t.Fatalf("after adding an active one again: %+v", l)
	}
}

// testLabelerStatus: pausing and resuming keep the cursor and move the
// update time; unknown labelers are ErrNotFound everywhere.
func testLabelerStatus(t *testing.T, s storage.Store) {
	ctx := context.Background()
	putLabelerT(t, s, labelerA, base)
	applyLabelsT(t, s, labelerA, 42)
	for i, status := range []string{storage.LabelerPaused, storage.LabelerPaused, storage.LabelerActive} {
		at := base.Add(time.Duration(i+1) * time.Minute)
		if err := s.SetLabelerStatus(ctx, labelerA, status, at); err != nil {
			t.Fatalf("SetLabelerStatus %s: %v", status, err)
		}
		l := getLabelerT(t, s, labelerA)
		if l.Status != status || cursorOf(l) != "42" || !l.UpdatedAt.Equal(at) || !l.CreatedAt.Equal(base) {
			t.Fatalf("after %s: %+v (cursor %s)", status, l, cursorOf(l))
		}
	}
	if err := s.SetLabelerStatus(ctx, labelerA, "banana", base); err == nil {
		t.Fatal("SetLabelerStatus accepted an unknown status")
	}
	if l := getLabelerT(t, s, labelerA); l.Status != storage.LabelerActive {
		t.Fatalf("an unknown status changed the labeler: %+v", l)
	}
	if _, err := s.GetLabeler(ctx, labelerB); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetLabeler unknown: %v", err)
	}
	if err := s.SetLabelerStatus(ctx, labelerB, storage.LabelerPaused, base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("SetLabelerStatus unknown: %v", err)
	}
	if err := s.DeleteLabeler(ctx, labelerB); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeleteLabeler unknown: %v", err)
	}
	if err := s.ApplyLabels(ctx, storage.LabelBatch{Src: labelerB, Cursor: 1}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ApplyLabels unknown: %v", err)
	}
}

// testLabelerList: every labeler, oldest first, whatever its DID's order.
func testLabelerList(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if list, err := s.ListLabelers(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	putLabelerT(t, s, labelerB, base)
	putLabelerT(t, s, labelerA, base.Add(time.Second))
	putLabelerT(t, s, "did:web:labeler.example.com", base.Add(2*time.Second))
	if err := s.SetLabelerStatus(ctx, labelerB, storage.LabelerPaused, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListLabelers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var dids []string
	for _, l := range list {
		dids = append(dids, l.DID+" "+l.Status)
	}
	want := []string{labelerB + " paused", labelerA + " active", "did:web:labeler.example.com active"}
	if !reflect.DeepEqual(dids, want) {
		t.Fatalf("ListLabelers: %v, want %v", dids, want)
	}
}

// testLabelRoundTrip: every field of a label comes back as stored, times
// in UTC; a label without a CID, expiry or signature comes back without.
func testLabelRoundTrip(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerA, base)
	full := storage.Label{
		Src: labelerA, URI: labelURI, CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
		Val: "porn", Cts: base.Add(time.Microsecond), Exp: base.Add(48 * time.Hour),
		Sig: []byte{0, 1, 2, 0xff, 0x80}, Ver: 1,
	}
	bare := storage.Label{Src: labelerA, URI: "did:plc:alice", Val: "!hide", Cts: base.Add(2 * time.Second)}
	applyLabelsT(t, s, labelerA, 1, full, bare)
	got := labelsAt(t, s, base.Add(time.Hour), labelURI, "did:plc:alice")
	if len(got) != 2 || len(got[labelURI]) != 1 || len(got["did:plc:alice"]) != 1 {
		t.Fatalf("LabelsFor: %+v", got)
	}
	if g := got[labelURI][0]; !reflect.DeepEqual(g, full) || g.Cts.Location() != time.UTC || g.Exp.Location() != time.UTC {
		t.Fatalf("full label:\n got %+v\nwant %+v", g, full)
	}
	if g := got["did:plc:alice"][0]; !reflect.DeepEqual(g, bare) {
		t.Fatalf("bare label:\n got %+v\nwant %+v", g, bare)
	}
}

// testLabelCursor: the cursor moves with each batch, an empty batch
// included, and a batch refused before it is stored moves neither the
// cursor nor any label.
func testLabelCursor(t *testing.T, s storage.Store) {
	ctx := context.Background()
	putLabelerT(t, s, labelerA, base)
	putLabelerT(t, s, labelerB, base)
	applyLabelsT(t, s, labelerA, 10, lbl(labelerA, labelURI, "spam", base))
	if l := getLabelerT(t, s, labelerA); cursorOf(l) != "10" || !l.UpdatedAt.Equal(base) {
		t.Fatalf("after a batch: %+v (cursor %s)", l, cursorOf(l))
	}
	if l := getLabelerT(t, s, labelerB); l.Cursor != nil {
		t.Fatalf("another labeler's cursor moved: %s", cursorOf(l))
	}
	applyLabelsT(t, s, labelerA, 11)
	if l := getLabelerT(t, s, labelerA); cursorOf(l) != "11" {
		t.Fatalf("after an empty batch: cursor %s", cursorOf(l))
	}
	mixed := storage.LabelBatch{Src: labelerA, Cursor: 12, Labels: []storage.Label{
		lbl(labelerA, labelURI, "rude", base), lbl(labelerB, labelURI, "nsfw", base),
	}}
	if err := s.ApplyLabels(ctx, mixed); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a batch with another labeler's label: %v", err)
	}
	if l := getLabelerT(t, s, labelerA); cursorOf(l) != "11" {
		t.Fatalf("a refused batch moved the cursor to %s", cursorOf(l))
	}
	if got := vals(labelsAt(t, s, base, labelURI)[labelURI]); !reflect.DeepEqual(got, []string{labelerA + " spam"}) {
		t.Fatalf("a refused batch stored labels: %v", got)
	}
}

// testLabelNewerWins: a label with a later or equal cts replaces the
// stored one; an older one replayed changes nothing.
func testLabelNewerWins(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerA, base)
	first := lbl(labelerA, labelURI, "spam", base.Add(time.Minute))
	first.CID = "bafyfirst"
	applyLabelsT(t, s, labelerA, 1, first)

	older := lbl(labelerA, labelURI, "spam", base)
	older.CID, older.Exp = "bafyolder", base.Add(time.Second)
	applyLabelsT(t, s, labelerA, 2, older)
	got := labelsAt(t, s, base.Add(time.Hour), labelURI)[labelURI]
	if len(got) != 1 || got[0].CID != "bafyfirst" || !got[0].Cts.Equal(first.Cts) || !got[0].Exp.IsZero() {
		t.Fatalf("an older label replaced a newer one: %+v", got)
	}

	same := lbl(labelerA, labelURI, "spam", first.Cts)
	same.CID = "bafysame"
	applyLabelsT(t, s, labelerA, 3, same)
	if got := labelsAt(t, s, base, labelURI)[labelURI]; len(got) != 1 || got[0].CID != "bafysame" {
		t.Fatalf("a label with the same cts did not replace: %+v", got)
	}

	newer := lbl(labelerA, labelURI, "spam", base.Add(2*time.Minute))
	applyLabelsT(t, s, labelerA, 4, newer)
	if got := labelsAt(t, s, base, labelURI)[labelURI]; len(got) != 1 || !reflect.DeepEqual(got[0], newer) {
		t.Fatalf("a newer label did not replace: %+v", got)
	}
	if l := getLabelerT(t, s, labelerA); cursorOf(l) != "4" {
		t.Fatalf("cursor %s, want 4 (ignored labels still move it)", cursorOf(l))
	}
}

// testLabelNegation: a negation stops the label applying; the label
// replayed from before the negation stays negated; a label newer than
// the negation applies again. Other values on the subject are untouched.
func testLabelNegation(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerA, base)
	applyLabelsT(t, s, labelerA, 1, lbl(labelerA, labelURI, "spam", base), lbl(labelerA, labelURI, "rude", base))
	neg := lbl(labelerA, labelURI, "spam", base.Add(time.Minute))
	neg.Neg = true
	applyLabelsT(t, s, labelerA, 2, neg)
	if got := vals(labelsAt(t, s, base, labelURI)[labelURI]); !reflect.DeepEqual(got, []string{labelerA + " rude"}) {
		t.Fatalf("after the negation: %v", got)
	}
	applyLabelsT(t, s, labelerA, 3, lbl(labelerA, labelURI, "spam", base.Add(30*time.Second)))
	if got := vals(labelsAt(t, s, base, labelURI)[labelURI]); !reflect.DeepEqual(got, []string{labelerA + " rude"}) {
		t.Fatalf("an older label replayed after its negation applies: %v", got)
	}
	applyLabelsT(t, s, labelerA, 4, lbl(labelerA, labelURI, "spam", base.Add(2*time.Minute)))
	if got := vals(labelsAt(t, s, base, labelURI)[labelURI]); !reflect.DeepEqual(got, []string{labelerA + " rude", labelerA + " spam"}) {
		t.Fatalf("a label newer than its negation does not apply: %v", got)
	}
	// A negation of a label never seen is kept, and blocks it too.
	neg2 := lbl(labelerA, "did:plc:bob", "spam", base.Add(time.Hour))
	neg2.Neg = true
	applyLabelsT(t, s, labelerA, 5, neg2)
	applyLabelsT(t, s, labelerA, 6, lbl(labelerA, "did:plc:bob", "spam", base))
	if got := labelsAt(t, s, base, "did:plc:bob"); len(got) != 0 {
		t.Fatalf("a label older than a negation stored first applies: %v", got)
	}
}

// testLabelExpiry: a label applies until its exp, not at or after it;
// the expired label is kept (a newer one replaces it as usual).
func testLabelExpiry(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerA, base)
	exp := base.Add(time.Hour)
	l := lbl(labelerA, labelURI, "spam", base)
	l.Exp = exp
	applyLabelsT(t, s, labelerA, 1, l, lbl(labelerA, labelURI, "rude", base))
	for _, tc := range []struct {
		now  time.Time
		want []string
	}{
		{base, []string{labelerA + " rude", labelerA + " spam"}},
		{exp.Add(-time.Microsecond), []string{labelerA + " rude", labelerA + " spam"}},
		{exp, []string{labelerA + " rude"}},
		{exp.Add(time.Hour), []string{labelerA + " rude"}},
	} {
		got := labelsAt(t, s, tc.now, labelURI)[labelURI]
		if !reflect.DeepEqual(vals(got), tc.want) {
			t.Fatalf("at %v: %v, want %v", tc.now, vals(got), tc.want)
		}
		for _, g := range got {
			if !g.AppliesAt(tc.now) {
				t.Fatalf("LabelsFor at %v returned %+v, which does not apply", tc.now, g)
			}
		}
	}
	// An older replay does not bring back an expiry the newer label lacks.
	renewed := lbl(labelerA, labelURI, "spam", base.Add(2*time.Hour))
	applyLabelsT(t, s, labelerA, 2, renewed)
	applyLabelsT(t, s, labelerA, 3, l)
	if got := vals(labelsAt(t, s, exp.Add(24*time.Hour), labelURI)[labelURI]); !reflect.DeepEqual(got, []string{labelerA + " rude", labelerA + " spam"}) {
		t.Fatalf("after renewal: %v", got)
	}
}

// testLabelsForOrder: each subject's labels by Src then Val, whatever the
// order they arrived in; subjects without labels (or with only
// negated ones) are absent; a subject asked twice is answered once.
func testLabelsForOrder(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerB, base)
	putLabelerT(t, s, labelerA, base)
	other := "at://did:plc:bob/app.bsky.feed.post/3kxyz"
	applyLabelsT(t, s, labelerB, 1, lbl(labelerB, labelURI, "b", base), lbl(labelerB, labelURI, "a", base),
		lbl(labelerB, "did:plc:alice", "z", base))
	neg := lbl(labelerB, other, "a", base)
	neg.Neg = true
	applyLabelsT(t, s, labelerB, 2, neg)
	applyLabelsT(t, s, labelerA, 1, lbl(labelerA, labelURI, "c", base), lbl(labelerA, labelURI, "a", base))
	got := labelsAt(t, s, base, labelURI, "did:plc:alice", other, "at://did:plc:nobody/x.y.z/1", labelURI)
	want := map[string][]string{
		labelURI:        {labelerA + " a", labelerA + " c", labelerB + " a", labelerB + " b"},
		"did:plc:alice": {labelerB + " z"},
	}
	gotVals := map[string][]string{}
	for k, v := range got {
		gotVals[k] = vals(v)
	}
	if !reflect.DeepEqual(gotVals, want) {
		t.Fatalf("LabelsFor: %v, want %v", gotVals, want)
	}
	if got := labelsAt(t, s, base); len(got) != 0 {
		t.Fatalf("LabelsFor no subjects: %v", got)
	}
	// Many subjects in one call.
	var many []string
	for i := range 1200 {
		many = append(many, fmt.Sprintf("at://did:plc:many/x.y.z/%d", i))
	}
	var batch []storage.Label
	for i := 0; i < len(many); i += 100 {
		batch = append(batch, lbl(labelerA, many[i], "v", base))
	}
	applyLabelsT(t, s, labelerA, 2, batch...)
	if got := labelsAt(t, s, base, many...); len(got) != len(batch) || len(got[many[1100]]) != 1 {
		t.Fatalf("LabelsFor %d subjects: %d answered, want %d", len(many), len(got), len(batch))
	}
}

// testLabelBatchRepeats: a batch carrying one (Src, URI, Val) several times
// ends as if its labels had been applied one by one.
func testLabelBatchRepeats(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerA, base)
	l1 := lbl(labelerA, labelURI, "spam", base.Add(time.Minute))
	l1.CID = "bafy1"
	l0 := lbl(labelerA, labelURI, "spam", base) // older, after l1 in the batch
	l0.CID = "bafy0"
	neg := lbl(labelerA, labelURI, "rude", base.Add(time.Minute))
	neg.Neg = true
	tie1 := lbl(labelerA, labelURI, "tie", base)
	tie1.CID = "bafytie1"
	tie2 := lbl(labelerA, labelURI, "tie", base) // same cts, later in the batch: wins
	tie2.CID = "bafytie2"
	applyLabelsT(t, s, labelerA, 1, l1, lbl(labelerA, labelURI, "rude", base), l0, neg, tie1, tie2)
	got := labelsAt(t, s, base, labelURI)[labelURI]
	if want := []string{labelerA + " spam", labelerA + " tie"}; !reflect.DeepEqual(vals(got), want) {
		t.Fatalf("labels: %v, want %v", vals(got), want)
	}
	if got[0].CID != "bafy1" || got[1].CID != "bafytie2" {
		t.Fatalf("the wrong repeat won: %+v", got)
	}
}

// testLabelLargeBatch: a batch of a few hundred labels (several upsert
// statements) is stored whole, with the cursor.
func testLabelLargeBatch(t *testing.T, s storage.Store) {
	putLabelerT(t, s, labelerA, base)
	const n = 301
	var batch []storage.Label
	var subjects []string
	for i := range n {
		uri := fmt.Sprintf("at://did:plc:alice/app.bsky.feed.post/%04d", i)
		subjects = append(subjects, uri)
		l := lbl(labelerA, uri, "spam", base.Add(time.Duration(i)*time.Second))
		l.Neg = i%10 == 9
		batch = append(batch, l)
	}
	applyLabelsT(t, s, labelerA, 99, batch...)
	got := labelsAt(t, s, base, subjects...)
	if len(got) != n-n/10 {
		t.Fatalf("%d subjects labelled, want %d", len(got), n-n/10)
	}
	for i, uri := range subjects {
		if l := got[uri]; (i%10 == 9) != (len(l) == 0) || len(l) == 1 && !reflect.DeepEqual(l[0], batch[i]) {
			t.Fatalf("label %d: %+v, want %+v", i, l, batch[i])
		}
	}
	if l := getLabelerT(t, s, labelerA); cursorOf(l) != "99" {
		t.Fatalf("cursor %s", cursorOf(l))
	}
}

// testLabelerDelete: deleting a labeler removes it and its labels, and
// no other labeler's.
func testLabelerDelete(t *testing.T, s storage.Store) {
	ctx := context.Background()
	putLabelerT(t, s, labelerA, base)
	putLabelerT(t, s, labelerB, base)
	applyLabelsT(t, s, labelerA, 1, lbl(labelerA, labelURI, "spam", base), lbl(labelerA, "did:plc:alice", "spam", base))
	applyLabelsT(t, s, labelerB, 1, lbl(labelerB, labelURI, "spam", base))
	if err := s.DeleteLabeler(ctx, labelerA); err != nil {
		t.Fatalf("DeleteLabeler: %v", err)
	}
	if _, err := s.GetLabeler(ctx, labelerA); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetLabeler after delete: %v", err)
	}
	got := labelsAt(t, s, base, labelURI, "did:plc:alice")
	if len(got) != 1 || !reflect.DeepEqual(vals(got[labelURI]), []string{labelerB + " spam"}) {
		t.Fatalf("labels after deleting %s: %v", labelerA, got)
	}
	if list, err := s.ListLabelers(ctx); err != nil || len(list) != 1 || list[0].DID != labelerB {
		t.Fatalf("ListLabelers after delete: %+v %v", list, err)
	}
	if err := s.DeleteLabeler(ctx, labelerA); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeleteLabeler twice: %v", err)
	}
	// Added again, it starts afresh: no cursor, no labels.
	if created, err := s.PutLabeler(ctx, labelerA, base.Add(time.Hour)); err != nil || !created {
		t.Fatalf("PutLabeler after delete: created=%v %v", created, err)
	}
	if l := getLabelerT(t, s, labelerA); l.Cursor != nil || !l.CreatedAt.Equal(base.Add(time.Hour)) {
		t.Fatalf("re-added: %+v", l)
	}
	if got := labelsAt(t, s, base, "did:plc:alice"); len(got) != 0 {
		t.Fatalf("labels came back: %v", got)
	}
}

// testLabelApplyDeleted: a batch for a labeler deleted meanwhile is
// ErrNotFound and stores nothing, not even the labeler.
func testLabelApplyDeleted(t *testing.T, s storage.Store) {
	ctx := context.Background()
	putLabelerT(t, s, labelerA, base)
	if err := s.DeleteLabeler(ctx, labelerA); err != nil {
		t.Fatal(err)
	}
	err := s.ApplyLabels(ctx, storage.LabelBatch{Src: labelerA, Cursor: 5, Labels: []storage.Label{lbl(labelerA, labelURI, "spam", base)}})
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ApplyLabels for a deleted labeler: %v", err)
	}
	if got := labelsAt(t, s, base, labelURI); len(got) != 0 {
		t.Fatalf("labels stored for a deleted labeler: %v", got)
	}
	if _, err := s.GetLabeler(ctx, labelerA); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the labeler came back: %v", err)
	}
}
