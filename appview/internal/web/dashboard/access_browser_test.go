package dashboard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
)

// inPage returns whether s is anywhere in the page: its markup, its
// visible text, or the value of one of its fields.
func inPage(t *testing.T, ctx context.Context, s string) bool {
	t.Helper()
	return eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = %q;
		return document.documentElement.outerHTML.includes(s) || document.body.innerText.includes(s) ||
			[...document.querySelectorAll("input, textarea")].some((i) => i.value.includes(s)); })()`, s))
}

// submit sets the form fields (selector, value pairs; set directly, as
// typing each key is slow) and clicks sel.
func submit(t *testing.T, ctx context.Context, sel string, fields ...string) {
	t.Helper()
	var acts []chromedp.Action[chromedp.Void]
	for i := 0; i+1 < len(fields); i += 2 {
		acts = append(acts, chromedp.SetValue(fields[i], fields[i+1]))
	}
	acts = append(acts, chromedp.Click(sel))
	if err := chromedp.Do(ctx, acts...); err != nil {
		t.Fatalf("fill and submit %s: %v", sel, err)
	}
}

// TestBrowserClientSecretOnce: registering an API client shows a field's
// validation error next to that field, then the client secret once; after
// a reload (and opening the client) the secret is nowhere in the page.
// The authentication key flow runs on the new client: create a key,
// recheck, rotate, revoke the retiring key (confirmed, the sessions
// destroyed said), then revoke all.
func TestBrowserClientSecretOnce(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/api-clients", "#create-client")

	submit(t, ctx, "#create-submit",
		"#c-client_id_url", "https://app.test/client-metadata.json",
		"#c-name", "Test app",
		"#c-client_uri", "ftp://app.test",
		"#c-redirect_uris", "https://app.test/callback")
	waitText(t, ctx, "#c-client_uri-error", "client_uri must be an http(s) URL")
	if inv := eval[string](t, ctx, `document.getElementById("c-client_uri").getAttribute("aria-invalid")`); inv != "true" {
		t.Errorf("the refused field is not marked invalid: %q", inv)
	}

	submit(t, ctx, "#create-submit", "#c-client_uri", "https://app.test")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#new-client-secret input.secret")); err != nil {
		t.Fatalf("no secret shown: %v", err)
	}
	secret := eval[string](t, ctx, `document.querySelector("#new-client-secret input.secret").value`)
	if !strings.HasPrefix(secret, "hvs_") {
		t.Fatalf("secret %q", secret)
	}
	waitText(t, ctx, "#new-client-secret", "shown only this once")
	waitText(t, ctx, "#clients tbody", "Test app")
	if !inPage(t, ctx, secret) {
		t.Fatal("inPage does not find the secret it shows")
	}
	if v := eval[bool](t, ctx, `!document.getElementById("c-c-client_uri-error") && document.getElementById("c-client_uri-error").hidden`); !v {
		t.Error("the field error stays after a successful registration")
	}

	// Reload: the list and the client's detail, never the secret.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("#clients")); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitText(t, ctx, "#clients tbody", "Test app")
	if err := chromedp.Do(ctx, chromedp.Click(`#clients button[aria-label="Manage Test app"]`), chromedp.WaitVisible("#detail-fields")); err != nil {
		t.Fatalf("open the client: %v", err)
	}
	waitText(t, ctx, "#detail-fields", "https://app.test/client-metadata.json")
	if inPage(t, ctx, secret) {
		t.Fatal("the client secret is in the page after a reload")
	}

	// The authentication key flow.
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#key-create"), chromedp.Click("#key-create")); err != nil {
		t.Fatalf("create key: %v", err)
	}
	waitText(t, ctx, "#auth-keys tbody", "current")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#key-recheck"), chromedp.Click("#key-recheck"), chromedp.WaitVisible("#recheck")); err != nil {
		t.Fatalf("recheck: %v", err)
	}
	waitText(t, ctx, "#recheck", "Not ready") // app.test publishes no metadata
	first := eval[string](t, ctx, `document.querySelector("#auth-keys tbody code").textContent`)
	if err := chromedp.Do(ctx, chromedp.Click("#key-rotate")); err != nil {
		t.Fatalf("rotate: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "Rotate the key?")
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "is retiring with 0 session(s)")
	waitText(t, ctx, "#auth-keys tbody", "retiring")
	if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#auth-keys button[aria-label="Revoke the retiring key %s"]`, first))); err != nil {
		t.Fatalf("revoke retiring: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "0 session(s) are destroyed")
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Revoked the key "+first+": 0 session(s) destroyed.")
	waitText(t, ctx, "#auth-keys tbody", "revoked")
	if err := chromedp.Do(ctx, chromedp.Click("#key-revoke-all")); err != nil {
		t.Fatalf("revoke all: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Revoked 1 key(s)")

	// Edit: a refused change under its field, then a rename and a rate
	// limit; deactivate (confirmed) and re-enable.
	if err := chromedp.Do(ctx, chromedp.Click("#edit summary"), chromedp.WaitVisible("#e-name")); err != nil {
		t.Fatalf("open the editor: %v", err)
	}
	submit(t, ctx, "#edit-submit", "#e-redirect_uris", " ")
	waitText(t, ctx, "#e-redirect_uris-error", "redirect_uris must list at least one URI")
	submit(t, ctx, "#edit-submit", "#e-redirect_uris", "https://app.test/callback", "#e-name", "Renamed app", "#e-rate_limit_capacity", "7")
	waitText(t, ctx, "#detail-name", "Renamed app")
	waitText(t, ctx, "#detail-fields", "capacity 7")
	if err := chromedp.Do(ctx, chromedp.Click("#toggle-active")); err != nil {
		t.Fatalf("deactivate: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "Deactivate “Renamed app”?")
	confirm(t, ctx)
	waitText(t, ctx, "#clients tbody", "deactivated")
	waitText(t, ctx, "#toggle-active", "Re-enable")
	if err := chromedp.Do(ctx, chromedp.Click("#toggle-active")); err != nil {
		t.Fatalf("re-enable: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#toggle-active", "Deactivate")
	waitTrue(t, ctx, "the client re-enabled", `!document.querySelector("#clients tbody").textContent.includes("deactivated")`)
	// Expected: the network log of the refused client_uri and redirect_uris.
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// TestBrowserAdminKeySecretOnce: an admin API key created on the page
// holds the ticked permissions only, its secret is shown once and gone
// after a reload, and revoking it (confirmed) makes it stop working; at
// 400 px the page fits the screen's width.
func TestBrowserAdminKeySecretOnce(t *testing.T) {
	ctx := browser(t, 15*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/api-keys", "#create-key")

	if err := chromedp.Do(ctx, chromedp.WaitVisible("#key-lexicons-read"), chromedp.Click("#key-lexicons-read")); err != nil {
		t.Fatalf("tick: %v", err)
	}
	submit(t, ctx, "#create-submit", "#key-name", "ci reader")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#new-key input.secret")); err != nil {
		t.Fatalf("no key shown: %v", err)
	}
	secret := eval[string](t, ctx, `document.querySelector("#new-key input.secret").value`)
	if r := env.Do(t, "GET", "/admin/lexicons", nil, testenv.Bearer(secret)...); r.Status != 200 {
		t.Fatalf("the new key reading lexicons: %d %s", r.Status, r.Raw)
	}
	if r := env.Do(t, "GET", "/admin/users", nil, testenv.Bearer(secret)...); r.Status != 403 {
		t.Fatalf("the new key reading users (not ticked): %d %s", r.Status, r.Raw)
	}
	waitText(t, ctx, "#keys tbody", "ci reader")

	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("#keys")); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitText(t, ctx, "#keys tbody", "ci reader")
	if inPage(t, ctx, secret) {
		t.Fatal("the key is in the page after a reload")
	}
	if !inPage(t, ctx, secret[:8]+"…") {
		t.Errorf("the list lacks the key's prefix %s", secret[:8])
	}

	if err := chromedp.Do(ctx, chromedp.Click(`#keys button[aria-label="Revoke ci reader"]`)); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "Revoke the key “ci reader”")
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Revoked the key “ci reader”.")
	if r := env.Do(t, "GET", "/admin/lexicons", nil, testenv.Bearer(secret)...); r.Status != 401 {
		t.Errorf("the revoked key: %d %s", r.Status, r.Raw)
	}

	// At phone width the page does not overflow sideways: the table
	// scrolls in its own box.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(400, 800), chromedp.Reload(), chromedp.WaitVisible("#keys tbody tr")); err != nil {
		t.Fatalf("phone width: %v", err)
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("at 400 px the page is %d px wide", w)
	}
	noConsoleErrors(t, &errs)
}

// visibleDeletes counts the page's visible destructive buttons (outside
// the confirmation dialog) and all of them, hidden included.
const visibleDeletes = `(() => {
	const all = [...document.querySelectorAll("main button.danger, main [data-action=delete]")];
	return [all.filter((b) => b.checkVisibility()).length, all.length];
})()`

// TestBrowserReadOnlyAdmin: an admin of the viewer template (plus reading
// users and keys, to see those pages) sees no delete, revoke or create
// controls on the users, admin API keys and API clients pages, and the
// #limits line says which permission each needs; forcing the hidden
// delete button of a client anyway is refused with a message naming
// api-clients:delete, next to the button, and the client stays.
func TestBrowserReadOnlyAdmin(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, _ := startInstance(t)
	perms := append(admins.Templates()["viewer"], admins.UsersRead, admins.APIKeysRead)
	viewer := env.AddAdmin(t, perms...)
	env.AddAdmin(t, admins.LexiconsRead) // a removable admin, for the users page
	client, _ := env.NewClient(t, apiclients.NewClient{Name: "Kept app"})
	u, err := env.Store.GetAdminUserByDID(context.Background(), viewer.Account.DID.String())
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(perms))
	for i, p := range perms {
		names[i] = string(p)
	}
	key, _, err := admins.MintKey(context.Background(), env.Store, u.ID, "viewer", names, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	for _, tc := range []struct {
		path, rows string
		limits     []string
	}{
		{"/dashboard/users", "#users tbody", []string{"Adding admins is unavailable: your account lacks the users:create permission.",
			"Changing permissions is unavailable: your account lacks the users:update permission.",
			"Removing admins is unavailable: your account lacks the users:delete permission."}},
		{"/dashboard/api-keys", "#keys tbody", []string{"Creating keys is unavailable: your account lacks the api-keys:create permission.",
			"Revoking keys is unavailable: your account lacks the api-keys:delete permission."}},
		{"/dashboard/api-clients", "#clients tbody", []string{"Registering clients is unavailable: your account lacks the api-clients:create permission.",
			"Deleting clients is unavailable: your account lacks the api-clients:delete permission."}},
	} {
		open(t, ctx, env, tc.path, tc.rows+" tr")
		for _, want := range tc.limits {
			waitText(t, ctx, "#limits", want)
		}
		counts := eval[[]int](t, ctx, visibleDeletes)
		if counts[0] != 0 {
			t.Errorf("%s: %d delete or revoke buttons are visible", tc.path, counts[0])
		}
		if counts[1] == 0 {
			t.Errorf("%s: no destructive button at all, the check above proves nothing", tc.path)
		}
		if eval[bool](t, ctx, `[...document.querySelectorAll("main form")].some((f) => f.checkVisibility())`) {
			t.Errorf("%s: a form is visible to a read-only admin", tc.path)
		}
	}

	// The API clients page is open: force the hidden delete button.
	if err := chromedp.Do(ctx, chromedp.Click(`#clients button[aria-label="Manage Kept app"]`), chromedp.WaitVisible("#detail-fields")); err != nil {
		t.Fatalf("open the client: %v", err)
	}
	eval[bool](t, ctx, `(() => { document.getElementById("delete-client").hidden = false; return true; })()`)
	if err := chromedp.Do(ctx, chromedp.Click("#delete-client")); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#detail-error", "Your account lacks the api-clients:delete permission this needs (the admin API answered: insufficient permissions).")
	if r := env.Do(t, "GET", "/admin/api-clients/"+client.ID, nil, testenv.Bearer(key)...); r.Status != 200 {
		t.Errorf("the client after a refused delete: %d %s", r.Status, r.Raw)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 403")
}

// TestBrowserUsers: adding an admin with a template and an extra
// permission, granting and revoking in the permissions editor, a refused
// DID shown under its field, and removing the admin (confirmed).
func TestBrowserUsers(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/users", "#add-user")

	submit(t, ctx, "#add-submit", "#user-did", "not-a-did")
	waitText(t, ctx, "#user-did-error", "did is not a valid DID")

	did := env.PLC.NewAccount(t, false, "https://pds.test").DID.String()
	eval[bool](t, ctx, `(() => { const s = document.getElementById("user-template");
		s.value = "viewer"; return s.dispatchEvent(new Event("change")); })()`)
	if err := chromedp.Do(ctx,
		chromedp.Click("#add-events-read"), // a viewer permission: unticked, so the template is not sent
		chromedp.Click("#add-users-read"),
	); err != nil {
		t.Fatalf("choose permissions: %v", err)
	}
	submit(t, ctx, "#add-submit", "#user-did", did)
	waitText(t, ctx, "#notice", "Added "+did)
	u, err := env.Store.GetAdminUserByDID(context.Background(), did)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{string(admins.UsersRead): true}
	for _, p := range admins.Templates()["viewer"] {
		if p != admins.EventsRead {
			want[string(p)] = true
		}
	}
	if len(u.Permissions) != len(want) {
		t.Errorf("stored permissions %v, want %v", u.Permissions, want)
	}
	for _, p := range u.Permissions {
		if !want[p] {
			t.Errorf("stored permission %s was not ticked", p)
		}
	}

	if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#users button[aria-label="Permissions of %s"]`, did)), chromedp.WaitVisible("#edit-perms"),
		chromedp.Click("#edit-users-read"), chromedp.Click("#edit-events-read"), chromedp.Click("#edit-submit")); err != nil {
		t.Fatalf("edit: %v", err)
	}
	waitText(t, ctx, "#notice", "1 granted, 1 revoked.")
	u, _ = env.Store.GetAdminUserByDID(context.Background(), did)
	if !slices.Contains(u.Permissions, string(admins.EventsRead)) || slices.Contains(u.Permissions, string(admins.UsersRead)) {
		t.Errorf("after the edit: %v", u.Permissions)
	}

	if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#users button[aria-label="Remove %s"]`, did))); err != nil {
		t.Fatalf("remove: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "Remove the admin "+did)
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Removed "+did)
	if strings.Contains(textNow(ctx, "#users tbody"), did) {
		t.Error("the removed admin is still listed")
	}

	// The super user hands the role over; the page reloads without it.
	heir := env.AddAdmin(t, admins.LexiconsRead).Account.DID.String()
	open(t, ctx, env, "/dashboard/users", "#users tbody tr")
	waitText(t, ctx, "#whoami", "(super user)")
	if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#users button[aria-label="Make %s the super user"]`, heir))); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "You stop being the super user")
	confirm(t, ctx)
	// The page reloads once the transfer is done: whoami, shown again,
	// no longer says super user, and the heir's row does.
	waitTrue(t, ctx, "the signed-in admin shown", `(() => { const w = document.getElementById("whoami");
		return !w.hidden && !w.textContent.includes("super user") && document.querySelectorAll("#users tbody tr").length > 0; })()`)
	waitText(t, ctx, "#users tbody", "super user")
	if u, err := env.Store.GetAdminUserByDID(context.Background(), heir); err != nil || !u.IsSuper {
		t.Fatalf("the heir after the transfer: %+v %v", u, err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#users button[aria-label^='Make ']").length`); n != 0 {
		t.Errorf("%d transfer buttons offered by an admin who is no longer the super user", n)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// TestBrowserScriptVariables: setting a variable empties the value field,
// lists the key and never the value; deleting it is confirmed.
func TestBrowserScriptVariables(t *testing.T) {
	ctx := browser(t, 15*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/script-variables", "#set-var")

	submit(t, ctx, "#set-submit", "#var-key", "9bad", "#var-value", "s3cr3t-value")
	waitText(t, ctx, "#var-key-error", "The key must be")
	submit(t, ctx, "#set-submit", "#var-key", "API_TOKEN")
	waitText(t, ctx, "#vars tbody", "API_TOKEN")
	if v := eval[string](t, ctx, `document.getElementById("var-value").value`); v != "" {
		t.Errorf("the value field holds %q after saving", v)
	}
	if inPage(t, ctx, "s3cr3t-value") {
		t.Error("the value is in the page after saving")
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#vars button[aria-label="Delete API_TOKEN"]`)); err != nil {
		t.Fatalf("delete: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted API_TOKEN.")
	waitText(t, ctx, "#no-vars", "No script variables are set.")
	if r := env.Do(t, "GET", "/admin/script-variables", nil, testenv.Bearer(key)...); !strings.Contains(string(r.Raw), `"variables":[]`) {
		t.Errorf("after deleting: %d %s", r.Status, r.Raw)
	}
	noConsoleErrors(t, &errs)
}
