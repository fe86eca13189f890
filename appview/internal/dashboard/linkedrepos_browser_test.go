package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/testenv"
)

// TestBrowserLinkedRepoGrantAndInvite: a malformed scope is refused next
// to the scopes field; an open grant is created and listed; an invite's
// URL is shown once (gone when the panel is opened again) while the
// invite stays listed; revoking it (confirmed) empties the list.
func TestBrowserLinkedRepoGrantAndInvite(t *testing.T) {
	ctx := browser(t, 15*time.Second)
	env, key := startInstance(t)
	var errs consoleErrors
	errs.listen(ctx)
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
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}
