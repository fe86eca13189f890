package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserLinkedRepoGrantAndInvite: a malformed scope is refused next
// to the scopes field; an open grant is created and listed; an invite's
// URL is shown once (gone when the panel is opened again) while the
// invite stays listed; revoking it (confirmed) empties the list; a grant
// pinned to a DID that does not resolve gets no authorization link, and
// the reason is shown next to the button.
func TestBrowserLinkedRepoGrantAndInvite(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/linked-repos", "#no-grants")

	err := chromedp.Do(ctx,
		clear("#scopes"),
		chromedp.SendKeys("#scopes", "atproto bogus"),
		chromedp.SendKeys("#reason", "Posts the weekly digest"),
		chromedp.Click("#create-button"),
		chromedp.WaitVisible("#scopes-error"),
	)
	if err != nil {
		t.Fatalf("bad scope: %v", err)
	}
	if msg := text(t, ctx, "#scopes-error"); msg != `malformed scope "bogus"` {
		t.Errorf("bad scope: %q", msg)
	}
	if inv, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("scopes").getAttribute("aria-invalid")`)); inv != "true" {
		t.Errorf("the scopes field is not marked invalid: %q", inv)
	}

	err = chromedp.Do(ctx,
		clear("#scopes"),
		chromedp.SendKeys("#scopes", "repo:app.example.post?action=create"),
		chromedp.Click("#create-button"),
		chromedp.WaitVisible("#detail"),
	)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	rows := text(t, ctx, "#grant-list tbody")
	for _, want := range []string{"open (any account via invite)", "pending authorization", "atproto", "repo:app.example.post?action=create", "Posts the weekly digest"} {
		if !strings.Contains(rows, want) {
			t.Errorf("grant row lacks %q: %q", want, rows)
		}
	}
	if vis, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("scopes-error").hidden`)); vis {
		t.Error("the scope error is still shown after a successful create")
	}

	err = chromedp.Do(ctx,
		chromedp.SetValue("#invite-expires", "86400"),
		chromedp.Click("#invite-create"),
		chromedp.WaitVisible("#invite-secret input"),
	)
	if err != nil {
		t.Fatalf("invite: %v", err)
	}
	url, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#invite-secret input").value`))
	if err != nil || !strings.HasPrefix(url, env.URL+"/invite/") {
		t.Fatalf("invite URL %q (%v)", url, err)
	}
	waitText(t, ctx, "#invite-secret", "shown only this once")
	waitText(t, ctx, "#invite-list tbody", "Revoke")
	var list struct {
		Grants []struct {
			ID string `json:"id"`
		} `json:"linked_repos"`
	}
	env.Do(t, "GET", "/admin/linked-repos", nil, testenv.Bearer(key)...).JSON(t, &list)
	if len(list.Grants) != 1 {
		t.Fatalf("grants: %+v", list)
	}
	invitesPath := "/admin/linked-repos/" + list.Grants[0].ID + "/invites"
	if r := env.Do(t, "GET", invitesPath, nil, testenv.Bearer(key)...); !strings.Contains(string(r.Raw), `"invite_id"`) {
		t.Fatalf("the invite is not stored: %s", r.Raw)
	}

	// Opened again, the panel no longer holds the URL; the invite is listed.
	err = chromedp.Do(ctx,
		chromedp.Click("#detail-close"),
		chromedp.Click(`#grant-list tbody button`),
		chromedp.WaitVisible("#invite-list"),
	)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML + [...document.querySelectorAll("input")].map(i => i.value).join(" ")`)); strings.Contains(html, url) {
		t.Error("the invite URL is shown again")
	}

	if err := chromedp.Do(ctx, chromedp.Click(`#invite-list tbody button`)); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	confirm(t, ctx)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#no-invites")); err != nil {
		t.Fatalf("revoked invite still listed: %v", err)
	}
	waitText(t, ctx, "#notice", "Invite revoked.")
	if r := env.Do(t, "GET", invitesPath, nil, testenv.Bearer(key)...); string(r.Raw) != `{"invites":[]}` {
		t.Errorf("after revoking: %s", r.Raw)
	}

	// A grant pinned to an account that does not resolve: the
	// authorization link cannot be made, and the reason is shown next to
	// the button.
	err = chromedp.Do(ctx,
		chromedp.Click("#detail-close"),
		chromedp.SendKeys("#handle", "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"),
		chromedp.Click("#create-button"),
		chromedp.WaitVisible("#authorize-pinned"),
		chromedp.Click("#authorize"),
		chromedp.WaitVisible("#authorize-error"),
	)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	if msg := text(t, ctx, "#authorize-error"); msg != "cannot resolve did:plc:aaaaaaaaaaaaaaaaaaaaaaaa" {
		t.Errorf("authorize error: %q", msg)
	}
	if vis, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("authorize-result").hidden`)); vis {
		t.Error("an authorization link is shown after a refusal")
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// TestBrowserReadOnlyPluginsAndLinkedRepos: at phone width, an admin
// holding only the read permissions sees the plugins and linked repos
// pages without their install, create and delete controls, with the
// reasons at the top; forcing the hidden delete of a grant is refused by
// the API and explained next to the button; nothing overflows the
// viewport.
func TestBrowserReadOnlyPluginsAndLinkedRepos(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	if r := env.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto transition:generic",
		"handle": "bot.example.com", "reason": "the digest bot"}, testenv.Bearer(key)...); r.Status != 200 {
		t.Fatalf("create grant: %d %s", r.Status, r.Raw)
	}
	reader := env.AddAdmin(t, admins.PluginsRead, admins.LinkedReposRead, admins.APIKeysCreate)
	r := reader.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard",
		"permissions": []string{string(admins.PluginsRead), string(admins.LinkedReposRead), string(admins.APIKeysCreate)}})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	readerKey, _ := r.Object(t)["key"].(string)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(400, 800)); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/dashboard/signin"),
		chromedp.SendKeys("#key", readerKey),
		chromedp.WaitEnabled("#signin-key button"),
		chromedp.Click("#signin-key button"),
		chromedp.WaitVisible("#whoami"),
	)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	hidden := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if h, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("`+id+`").hidden`)); err != nil || !h {
				t.Errorf("#%s is offered to a read-only admin (%v)", id, err)
			}
		}
	}
	overflow := func(page string) {
		t.Helper()
		w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil || w > 400 {
			t.Errorf("%s is %d px wide at a 400 px viewport (%v)", page, w, err)
		}
	}

	open(t, ctx, env, "/dashboard/plugins", "#no-plugins")
	waitText(t, ctx, "#limits", "Installing, reloading and setting secrets is unavailable: your account lacks the plugins:create permission.")
	waitText(t, ctx, "#limits", "Deleting a plugin is unavailable: your account lacks the plugins:delete permission.")
	hidden("install", "reload-form", "delete-plugin", "check-update")
	overflow("the plugins page")

	open(t, ctx, env, "/dashboard/linked-repos", "#grant-list")
	waitText(t, ctx, "#limits", "lacks the linked-repos:create permission")
	waitText(t, ctx, "#limits", "lacks the linked-repos:delete permission")
	hidden("create", "delete-grant")
	waitText(t, ctx, "#grant-list tbody", "bot.example.com")
	overflow("the linked repos page")
	if err := chromedp.Do(ctx, chromedp.Click(`#grant-list tbody button`), chromedp.WaitVisible("#detail")); err != nil {
		t.Fatalf("manage: %v", err)
	}
	hidden("authorize", "invite-form")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("delete-grant").click(), true`)); err != nil {
		t.Fatal(err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#delete-error", "Your account lacks the linked-repos:delete permission this needs (the admin API answered: insufficient permissions).")
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 403")
}
