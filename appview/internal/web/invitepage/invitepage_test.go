package invitepage_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/web/invitepage"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type authorizer struct{ last atomic.Value }

func (a *authorizer) AuthorizeURL(_ context.Context, req linkedrepos.AuthorizeRequest) (string, error) {
	a.last.Store(req)
	return "https://pds.example/oauth/authorize?request_uri=urn:x", nil
}

type page struct {
	status int
	header http.Header
	body   string
}

// client does not follow redirects.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func fetch(t *testing.T, method, u string, form url.Values) page {
	t.Helper()
	var resp *http.Response
	var err error
	if method == "POST" {
		resp, err = client.PostForm(u, form)
	} else {
		resp, err = client.Get(u)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, resp.Header, string(b)}
}

type env struct {
	url  string
	svc  *linkedrepos.Service
	at   *atomic.Int64
	auth *authorizer
}

func newEnv(t *testing.T, store storage.Store, withAuth bool) *env {
	e := &env{at: &atomic.Int64{}}
	e.at.Store(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	opt := linkedrepos.Options{Store: store, Now: func() time.Time { return time.UnixMicro(e.at.Load()).UTC() }}
	if withAuth {
		e.auth = &authorizer{}
		opt.Authorizer = e.auth
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	opt.BaseURL = func(context.Context) string { return srv.URL }
	e.svc = linkedrepos.New(opt)
	invitepage.New(e.svc, slog.New(slog.NewTextHandler(io.Discard, nil))).Mount(mux)
	return e
}

func (e *env) invite(t *testing.T, in linkedrepos.CreateInput, life int64) (storage.LinkedRepoGrant, string) {
	t.Helper()
	ctx := context.Background()
	g, err := e.svc.Create(ctx, "did:plc:admin", in)
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.Invite(ctx, "did:plc:admin", g.ID, &life)
	if err != nil {
		t.Fatal(err)
	}
	return g, m.URL
}

const xss = `<script>alert("x")</script><img src=x onerror=alert(1)>`

func TestInvitePageWithoutOAuthClient(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), false)
		_, u := e.invite(t, linkedrepos.CreateInput{Scopes: "atproto repo:app.example.post", Reason: xss}, 3600)
		p := fetch(t, "GET", u, nil)
		if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
			t.Fatalf("page: %d %v", p.status, p.header)
		}
		// The reason is shown as text, never as markup.
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, "<img") ||
			!strings.Contains(p.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") {
			t.Fatalf("reason not escaped: %s", p.body)
		}
		if !strings.Contains(p.body, "<code>repo:app.example.post</code>") || !strings.Contains(p.body, "<code>atproto</code>") {
			t.Fatalf("scopes not shown: %s", p.body)
		}
		if !strings.Contains(p.body, "Sign-in is not available on this instance yet") || strings.Contains(p.body, "<form") {
			t.Fatalf("sign-in offered without an OAuth client: %s", p.body)
		}
		if p.header.Get("Referrer-Policy") != "no-referrer" || p.header.Get("Cache-Control") != "no-store" ||
			!strings.Contains(p.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Fatalf("headers: %v", p.header)
		}
		// Posting the form answers 503 as a page, and uses nothing up.
		p = fetch(t, "POST", u, url.Values{"handle": {"carol.example.com"}})
		if p.status != 503 || !strings.Contains(p.body, "not available yet") {
			t.Fatalf("post without an OAuth client: %d %s", p.status, p.body)
		}
		if p := fetch(t, "GET", u, nil); p.status != 200 {
			t.Fatalf("invite gone after a refused sign-in: %d", p.status)
		}
	})
}

func TestInvitePageStates(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), true)
		ctx := context.Background()
		g, u := e.invite(t, linkedrepos.CreateInput{Scopes: "atproto", Reason: "Post the weekly digest"}, 60)

		p := fetch(t, "GET", u, nil)
		if p.status != 200 || !strings.Contains(p.body, "Post the weekly digest") || !strings.Contains(p.body, `<form method="post">`) ||
			!strings.Contains(p.body, `name="handle"`) {
			t.Fatalf("open grant page: %d %s", p.status, p.body)
		}
		// Sign-in starts: a redirect to the PDS.
		p = fetch(t, "POST", u, url.Values{"handle": {"Carol.Example.com"}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "https://pds.example/oauth/authorize?request_uri=urn:x" {
			t.Fatalf("start: %d %v %s", p.status, p.header, p.body)
		}
		if r := e.auth.last.Load().(linkedrepos.AuthorizeRequest); r.GrantID != g.ID || r.LoginHint != "carol.example.com" {
			t.Fatalf("request: %+v", r)
		}
		p = fetch(t, "POST", u, url.Values{"handle": {"<not a handle>"}})
		if p.status != 400 || strings.Contains(p.body, "<not") || !strings.Contains(p.body, "&lt;not a handle&gt;") {
			t.Fatalf("bad handle: %d %s", p.status, p.body)
		}

		// Unknown token: 404.
		p = fetch(t, "GET", e.url+linkedrepos.InvitePath+"guessed", nil)
		if p.status != 404 || !strings.Contains(p.body, "does not exist") {
			t.Fatalf("unknown: %d %s", p.status, p.body)
		}
		// Expired: 410.
		e.at.Add((61 * time.Second).Microseconds())
		p = fetch(t, "GET", u, nil)
		if p.status != 410 || !strings.Contains(p.body, "already used, was revoked or has expired") || strings.Contains(p.body, "weekly digest") {
			t.Fatalf("expired: %d %s", p.status, p.body)
		}
		if p := fetch(t, "POST", u, nil); p.status != 410 {
			t.Fatalf("start an expired invite: %d", p.status)
		}

		// Revoked and used: 410.
		_, revoked := e.invite(t, linkedrepos.CreateInput{Scopes: "atproto"}, 3600)
		rg, _ := e.svc.OpenInvite(ctx, revoked[strings.LastIndex(revoked, "/")+1:])
		if err := e.svc.RevokeInvite(ctx, "did:plc:admin", rg.Grant.ID, rg.Invite.ID); err != nil {
			t.Fatal(err)
		}
		if p := fetch(t, "GET", revoked, nil); p.status != 410 {
			t.Fatalf("revoked: %d", p.status)
		}
		pg, used := e.invite(t, linkedrepos.CreateInput{Scopes: "atproto", Handle: "dave.example.com"}, 3600)
		p = fetch(t, "GET", used, nil)
		if p.status != 200 || !strings.Contains(p.body, "dave.example.com") || strings.Contains(p.body, `name="handle"`) {
			t.Fatalf("pinned grant page: %d %s", p.status, p.body)
		}
		ug, _ := e.svc.OpenInvite(ctx, used[strings.LastIndex(used, "/")+1:])
		if err := e.svc.RedeemInvite(ctx, pg.ID, ug.Invite.ID, linkedrepos.Account{DID: "did:plc:dave", Handle: "dave.example.com"},
			linkedrepos.Session{Sealed: "s", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if p := fetch(t, "GET", used, nil); p.status != 410 {
			t.Fatalf("used: %d", p.status)
		}
	})
}

// TestLinkOutcomePages: the pages a browser gets at the end of a linked
// repo's authorization say which account is linked, or why it was not
// (under the refusal's status, an internal error's text withheld), and
// link back to the dashboard's linked repos.
func TestLinkOutcomePages(t *testing.T) {
	t.Parallel()
	h := invitepage.New(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	back := `href="` + invitepage.DashboardPage + `"`
	w := httptest.NewRecorder()
	h.Linked(w, httptest.NewRequest("GET", "/oauth/callback", nil), linkedrepos.Authorized{GrantID: "g1", DID: "did:plc:bob", Status: "active"})
	if body := w.Body.String(); w.Code != 200 || !strings.Contains(body, "Repository linked") ||
		!strings.Contains(body, "did:plc:bob") || !strings.Contains(body, back) {
		t.Fatalf("linked: %d %s", w.Code, body)
	}
	for _, c := range []struct {
		err    error
		status int
		want   string
	}{
		{fail.New(fail.Forbidden, "another account authorized this grant"), 403, "The repository was not linked: another account authorized this grant"},
		{errors.New("database on fire"), 500, "Something went wrong on this instance"},
	} {
		w := httptest.NewRecorder()
		h.LinkFailed(w, httptest.NewRequest("GET", "/oauth/callback", nil), c.err)
		body := w.Body.String()
		if w.Code != c.status || !strings.Contains(body, "Linking failed") || !strings.Contains(body, c.want) ||
			!strings.Contains(body, back) || strings.Contains(body, "on fire") || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%v: %d %s", c.err, w.Code, body)
		}
	}
}
