package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/lexicon/lexresolve"
	"github.com/lexview/lexview/storage/storagetest"
)

// publisher stands in for the network: one authority publishing the
// lexicons in docs.
type publisher struct{ docs map[string]string }

const publisherDID = "did:plc:publisherpublisherpublish"

func (p publisher) Authority(_ context.Context, nsid string) (lexresolve.Authority, error) {
	return lexresolve.Authority{Domain: "example.test", DID: publisherDID}, nil
}

func (p publisher) Schema(_ context.Context, nsid string) (lexresolve.Schema, error) {
	doc, ok := p.docs[nsid]
	if !ok {
		return lexresolve.Schema{}, &lexresolve.Error{Step: "record", NSID: nsid, Missing: true, Msg: "no such record"}
	}
	return lexresolve.Schema{Authority: lexresolve.Authority{Domain: "example.test", DID: publisherDID},
		URI: "at://" + publisherDID + "/com.atproto.lexicon.schema/" + nsid, CID: "bafy-published", Document: json.RawMessage(doc)}, nil
}

// TestBrowserNetworkLexicons: an admin previews what resolving an NSID
// finds, adds it (the lexicon appears in both lists), is told why an
// unpublished NSID cannot be added, and deletes the network lexicon
// after a confirmation.
func TestBrowserNetworkLexicons(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	pub := publisher{docs: map[string]string{"com.example.feed.post": strings.Replace(recordLexicon, "app.test.post", "com.example.feed.post", 1)}}
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{
		Security: appview.SecurityConfig{SessionSecret: sessionSecret},
		Network:  appview.NetworkConfig{LexiconResolver: pub},
	})
	su := env.Bootstrap(t)
	r := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	key, _ := r.Object(t)["key"].(string)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signInOnce(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/lexicons", "#network-form")
	waitText(t, ctx, "#no-network", "No network lexicons are tracked.")

	err := chromedp.Do(ctx, chromedp.SendKeys("#net-nsid", "com.example.feed.post"), chromedp.Click("#net-preview"), chromedp.WaitVisible("#net-preview-box"))
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	facts := strings.Join(strings.Fields(text(t, ctx, "#net-preview-facts")), " ")
	if !strings.Contains(facts, "Type record") || !strings.Contains(facts, "Authority DID "+publisherDID) || !strings.Contains(facts, "CID bafy-published") {
		t.Errorf("preview: %q", facts)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#net-add"), chromedp.WaitVisible("#network-list")); err != nil {
		t.Fatalf("add: %v", err)
	}
	waitText(t, ctx, "#notice", "Added com.example.feed.post (revision 1) from "+publisherDID+".")
	if row := strings.Join(strings.Fields(text(t, ctx, "#network-list tbody")), " "); !strings.HasPrefix(row, "com.example.feed.post "+publisherDID+" – ") ||
		!strings.Contains(row, "published") {
		t.Errorf("network row %q", row)
	}
	waitText(t, ctx, "#lexicons tbody", "com.example.feed.post")

	if err := chromedp.Do(ctx, clear("#net-nsid"), chromedp.SendKeys("#net-nsid", "com.example.feed.like"), chromedp.Click("#net-add"), chromedp.WaitVisible("#net-error")); err != nil {
		t.Fatalf("add an unpublished NSID: %v", err)
	}
	if msg := text(t, ctx, "#net-error"); !strings.Contains(msg, "record") {
		t.Errorf("unpublished: %q", msg)
	}

	if err := chromedp.Do(ctx, chromedp.Click("#network-list tbody button.danger")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted com.example.feed.post.")
	waitText(t, ctx, "#no-network", "No network lexicons are tracked.")
	waitText(t, ctx, "#no-lexicons", "No lexicons yet.")
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// TestBrowserLexiconsReadOnly: an admin holding only lexicons:read and
// scripts:read sees the lexicons and scripts but no upload, delete,
// add or save, and the page says which permission each lacks.
func TestBrowserLexiconsReadOnly(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, superKey := startInstance(t)
	perms := []admins.Permission{admins.LexiconsRead, admins.ScriptsRead, admins.APIKeysCreate}
	viewer := env.AddAdmin(t, perms...)
	r := viewer.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "viewer", "permissions": perms})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	if r := env.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": json.RawMessage(queryLexicon), "backfill": false},
		"Authorization", "Bearer "+superKey); r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Raw)
	}
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	// The key form, as an admin signs in.
	signIn(t, ctx, env, key)
	signOutAtEnd(t, ctx)
	open(t, ctx, env, "/dashboard/lexicons", "#lexicons")
	waitText(t, ctx, "#limits", "Uploading lexicons is unavailable: your account lacks the lexicons:create permission.")
	waitText(t, ctx, "#limits", "Deleting lexicons is unavailable: your account lacks the lexicons:delete permission.")
	hidden := eval[bool](t, ctx, `document.getElementById("new-lexicon").hidden && document.getElementById("net-add").hidden &&
		document.querySelectorAll("#lexicons button, #network-list button").length === 0`)
	if !hidden {
		t.Error("a read-only admin is offered to change lexicons")
	}
	open(t, ctx, env, "/dashboard/lexicons?id=app.test.listPosts", "#playground")
	if eval[bool](t, ctx, `!document.getElementById("edit-lexicon").hidden || !document.getElementById("delete-lexicon").hidden`) {
		t.Error("a read-only admin is offered to edit or delete the lexicon")
	}
	// Without api-clients:view the playground asks for a key.
	waitText(t, ctx, "#pg-client-help", "lacks the api-clients:view permission")
	open(t, ctx, env, "/dashboard/scripts", "#list-view")
	waitText(t, ctx, "#limits", "Creating, editing and deleting scripts is unavailable: your account lacks the scripts:manage permission.")
	// Expected: the overview's statistics, which sign-in lands on, are
	// refused.
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 403")
}
