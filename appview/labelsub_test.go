package appview_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/labelertest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestLabelerSubscriptions drives the subscriptions through the admin
// API: adding a labeler subscribes (from cursor 0, replaying its
// history), labels arrive live, pausing closes the connection, resuming
// continues from the cursor, a restart continues from it too, and
// deleting stops the subscription and removes the labels.
func TestLabelerSubscriptions(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := testenv.New(t, store, appview.Config{})
		admin := env.Bootstrap(t)
		lab := labelertest.New(t, env.PLC, labelertest.Options{K256: true})
		subject := "at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/com.example.post/3kabc"
		applying := func() []string {
			got, err := store.LabelsFor(context.Background(), []string{subject}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var vals []string
			for _, l := range got[subject] {
				vals = append(vals, l.Val)
			}
			return vals
		}
		cursor := func() int64 {
			l, err := store.GetLabeler(context.Background(), lab.DID)
			if err != nil || l.Cursor == nil {
				return -1
			}
			return *l.Cursor
		}
		waitCursor := func(seq int64) {
			t.Helper()
			deadline := time.Now().Add(60 * time.Second)
			for cursor() != seq {
				if time.Now().After(deadline) {
					t.Fatalf("cursor %d, want %d", cursor(), seq)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}

		lab.Emit(lab.Label(subject, "history"))
		if r := admin.Do(t, "POST", "/admin/labelers", map[string]any{"did": lab.DID}); r.Status != 201 {
			t.Fatalf("add: %d %s", r.Status, r.Raw)
		}
		waitCursor(1)
		waitCursor(lab.Emit(lab.Label(subject, "live")))
		if got := applying(); !slices.Equal(got, []string{"history", "live"}) {
			t.Fatalf("labels = %v", got)
		}

		if r := admin.Do(t, "PATCH", "/admin/labelers/"+lab.DID, map[string]any{"status": "paused"}); r.Status != 200 {
			t.Fatalf("pause: %d %s", r.Status, r.Raw)
		}
		waitFor(t, "the connection to close", func() bool { return lab.Open() == 0 })
		lab.Emit(lab.Label(subject, "while-paused"))
		if r := admin.Do(t, "PATCH", "/admin/labelers/"+lab.DID, map[string]any{"status": "active"}); r.Status != 200 {
			t.Fatalf("resume: %d %s", r.Status, r.Raw)
		}
		waitCursor(3)

		// A restart continues from the stored cursor.
		if err := env.App.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		lab.Emit(lab.Label(subject, "while-down"))
		env2 := testenv.New(t, store, appview.Config{Network: appview.NetworkConfig{PLCURL: env.PLC.URL}})
		waitCursor(4)
		if got := lab.Cursors(); !slices.Equal(got, []int64{0, 2, 3}) {
			t.Fatalf("cursors = %v, want [0 2 3]", got)
		}
		if got := applying(); !slices.Equal(got, []string{"history", "live", "while-down", "while-paused"}) {
			t.Fatalf("labels = %v", got)
		}

		if r := env2.Do(t, "DELETE", "/admin/labelers/"+lab.DID, nil, testenv.Bearer(admin.Account.ServiceAuth(t))...); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Raw)
		}
		waitFor(t, "the connection to close", func() bool { return lab.Open() == 0 })
		if got := applying(); len(got) != 0 {
			t.Fatalf("labels after delete = %v", got)
		}
	})
}
