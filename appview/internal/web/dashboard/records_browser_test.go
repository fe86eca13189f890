package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage"
)

// rows counts the rows of the table body sel.
func rows(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel+" tbody tr")))
	if err != nil {
		t.Fatalf("rows of %s: %v", sel, err)
	}
	return n
}

// TestBrowserRecords: the records page lists every collection, a
// collection picked from the picker (with its count), pages through a
// larger collection with the API's cursor, shows a record's JSON and the
// label on it, and deletes it after the confirmation: the row, the
// collection's count and the store all lose it; then a whole collection.
func TestBrowserRecords(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	seed(t, env.Store, "app.test.post", 3)
	seed(t, env.Store, "app.test.like", 30)
	const labeler = "did:plc:dashboardlabeler"
	target := "at://did:plc:dashboardtest/app.test.post/r001"
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if _, err := env.Store.PutLabeler(context.Background(), labeler, at); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.ApplyLabels(context.Background(), storage.LabelBatch{Src: labeler, Cursor: 1, Labels: []storage.Label{
		{Src: labeler, URI: target, Val: "spam", Cts: at, Ver: 1, Sig: []byte("sig")},
	}}); err != nil {
		t.Fatal(err)
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/records", "#records")
	waitText(t, ctx, "#summary", "of every collection")
	if n := rows(t, ctx, "#records"); n != 33 {
		t.Fatalf("every collection: %d rows, want 33", n)
	}
	if opts := text(t, ctx, "#collection"); !strings.Contains(opts, "app.test.like (30)") || !strings.Contains(opts, "app.test.post (3)") {
		t.Fatalf("collection picker: %q", opts)
	}

	// Pages of 25 through the API's cursor.
	open(t, ctx, env, "/dashboard/records?collection=app.test.like&limit=25", "#records")
	waitText(t, ctx, "#summary", "Records 1–25 of app.test.like")
	if err := chromedp.Do(ctx, chromedp.Click("#next-page")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#summary", "Records 26–30 of app.test.like")
	if n := rows(t, ctx, "#records"); n != 5 {
		t.Fatalf("second page: %d rows", n)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#prev-page")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#summary", "Records 1–25 of app.test.like")

	// A collection picked, a record opened.
	if err := chromedp.Do(ctx, choose("#collection", "app.test.post")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#summary", "Records 1–3 of app.test.post")
	if err := chromedp.Do(ctx, chromedp.Click(`button[aria-label="View `+target+`"]`), chromedp.WaitVisible("#detail")); err != nil {
		t.Fatalf("open the record: %v", err)
	}
	if j := text(t, ctx, "#detail-json"); !strings.Contains(j, `"n": 1`) || !strings.Contains(j, `"$type": "app.test.post"`) {
		t.Errorf("record JSON: %q", j)
	}
	if l := strings.Join(strings.Fields(text(t, ctx, "#labels tbody")), " "); !strings.HasPrefix(l, "spam this record "+labeler) {
		t.Errorf("labels: %q", l)
	}

	// Deleting asks first; cancelling keeps the record.
	if err := chromedp.Do(ctx, chromedp.Click("#delete-record"), chromedp.WaitVisible("#confirm-cancel"), chromedp.Click("#confirm-cancel")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#delete-record")); err != nil {
		t.Fatal(err)
	}
	if q := text(t, ctx, "#confirm-text"); !strings.Contains(q, target) {
		t.Errorf("confirmation: %q", q)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted "+target)
	waitText(t, ctx, "#summary", "Records 1–2 of app.test.post")
	waitText(t, ctx, "#collection", "app.test.post (2)")
	if n, err := env.Store.CountRecords(context.Background(), "app.test.post"); err != nil || n != 2 {
		t.Errorf("app.test.post holds %d records (%v), want 2", n, err)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("detail").hidden`)); err != nil || !hidden {
		t.Errorf("the deleted record's detail is still shown (%v)", err)
	}

	// A whole collection, after its confirmation naming the count.
	if err := chromedp.Do(ctx, choose("#collection", "app.test.like")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#summary", "of app.test.like")
	if err := chromedp.Do(ctx, chromedp.Click("#delete-collection")); err != nil {
		t.Fatal(err)
	}
	if q := text(t, ctx, "#confirm-text"); !strings.Contains(q, "all 30 records of app.test.like") {
		t.Errorf("confirmation: %q", q)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted 30 records of app.test.like.")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#no-records")); err != nil {
		t.Fatal(err)
	}
	if n, err := env.Store.CountRecords(context.Background(), "app.test.like"); err != nil || n != 0 {
		t.Errorf("app.test.like holds %d records (%v), want 0", n, err)
	}
	noConsoleErrors(t, &errs)
}

// TestBrowserDataReadOnly: an admin who may read records and backfill
// jobs but change neither is offered no deletion, no job form and no job
// actions, and the pages say which permissions are missing; a delete
// forced through a button the page hid is refused with the permission
// named next to it.
func TestBrowserDataReadOnly(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, _ := startInstance(t)
	seed(t, env.Store, "app.test.post", 2)
	perms := []admins.Permission{admins.RecordsRead, admins.BackfillRead, admins.APIKeysCreate}
	viewer := env.AddAdmin(t, perms...)
	r := viewer.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": perms})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/records?collection=app.test.post", "#records")
	waitText(t, ctx, "#limits", "Deleting records is unavailable: your account lacks the records:delete permission.")
	waitText(t, ctx, "#limits", "Deleting a whole collection is unavailable: your account lacks the records:delete-collection permission.")
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("bulk").hidden &&
		document.getElementById("delete-collection").hidden && document.getElementById("delete-record").hidden &&
		document.querySelector("#records th.select-col").hidden &&
		document.querySelectorAll("#records tbody input[type=checkbox]").length === 0`))
	if err != nil || !hidden {
		t.Errorf("deletion is offered to a read-only admin (%v)", err)
	}
	// Forced: the hidden button shown again and clicked.
	err = chromedp.Do(ctx,
		chromedp.Click(`#records tbody button`), chromedp.WaitVisible("#detail"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(document.getElementById("delete-record").hidden = false, true)`)(ctx, tg)
			return err
		}),
		chromedp.Click("#delete-record"),
	)
	if err != nil {
		t.Fatal(err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#delete-record-error", "Your account lacks the records:delete permission this needs")
	if n, _ := env.Store.CountRecords(context.Background(), "app.test.post"); n != 2 {
		t.Errorf("%d records left, want 2", n)
	}

	open(t, ctx, env, "/dashboard/backfill", "#history")
	waitText(t, ctx, "#limits", "lacks the backfill:create permission")
	if shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("create").hidden ||
		!document.getElementById("delete-all-details").hidden`)); err != nil || shown {
		t.Errorf("the job form or actions are offered to a read-only admin (%v)", err)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 403")
}
