package serviceid_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	"github.com/lexview/lexview/appview/internal/web/adminapi/serviceid"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type domainJSON struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	IsPrimary bool   `json:"is_primary"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	ClientID  string `json:"client_id"`
}

// domainsService boots a domains service on store for publicURL (the
// start-up step that makes the primary domain).
func domainsService(t *testing.T, w *admintest.World, publicURL string, log *slog.Logger) *domains.Service {
	t.Helper()
	if log == nil {
		log = w.Logger
	}
	svc := domains.New(domains.Options{Store: w.Store, Events: w.Events, PublicURL: publicURL, Now: time.Now, Logger: log})
	if err := svc.EnsurePrimary(context.Background()); err != nil {
		t.Fatal(err)
	}
	return svc
}

func serveDomains(t *testing.T, store storage.Store, publicURL string) *admintest.Server {
	t.Helper()
	return admintest.New(t, store, func(m *adminapi.Mux, w *admintest.World) {
		serviceid.MountDomains(m, domainsService(t, w, publicURL, nil))
	}, nil)
}

func listDomains(t *testing.T, c *admintest.Caller) []domainJSON {
	t.Helper()
	r := c.Do(t, "GET", "/admin/domains", nil)
	admintest.Expect(t, r, 200, "")
	var list []domainJSON
	r.JSON(t, &list)
	if list == nil {
		t.Fatalf("not an array: %s", r.Raw)
	}
	return list
}

func addDomain(t *testing.T, c *admintest.Caller, url string) domainJSON {
	t.Helper()
	r := c.Do(t, "POST", "/admin/domains", map[string]any{"url": url})
	admintest.Expect(t, r, 201, "")
	var d domainJSON
	r.JSON(t, &d)
	return d
}

// TestDomains: the primary domain comes from PUBLIC_URL's origin on first
// boot (once), others are added, validated, deleted and made primary.
func TestDomains(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		srv := serveDomains(t, store, "http://127.0.0.1:3000/ignored/path")
		su := srv.Super
		// A second boot changes nothing.
		domainsService(t, srv.World, "http://127.0.0.1:3000", nil)

		list := listDomains(t, su)
		if len(list) != 1 || list[0].URL != "http://127.0.0.1:3000" || !list[0].IsPrimary || list[0].ID == "" || list[0].CreatedAt == "" || list[0].UpdatedAt == "" {
			t.Fatalf("after boot: %+v", list)
		}
		primary := list[0]
		if primary.ClientID != "http://127.0.0.1:3000/oauth-client-metadata.json" {
			t.Fatalf("client_id: %q", primary.ClientID)
		}
		r := su.Do(t, "GET", "/admin/domains", nil)
		var raw []map[string]any
		r.JSON(t, &raw)
		if keys := fieldNames(raw[0]); keys != "client_id,created_at,id,is_primary,updated_at,url" {
			t.Fatalf("domain fields: %s", keys)
		}

		second := addDomain(t, su, "HTTP://127.0.0.2:3000") // loopback PUBLIC_URL: http accepted, normalised
		if second.URL != "http://127.0.0.2:3000" || second.IsPrimary {
			t.Fatalf("added: %+v", second)
		}
		third := addDomain(t, su, "https://lexview.example:443")
		if third.URL != "https://lexview.example" {
			t.Fatalf("default port kept: %+v", third)
		}
		for _, c := range []struct{ body any }{
			{map[string]any{"url": "http://127.0.0.2:3000"}},
			{map[string]any{"url": "https://LEXVIEW.example"}},
		} {
			admintest.Expect(t, su.Do(t, "POST", "/admin/domains", c.body), 400, "invalid domain: url already registered")
		}
		for url, msg := range map[string]string{
			"":                              "invalid domain url: url is required",
			"https://a.example/":            "invalid domain url: no trailing slash",
			"https://a.example/app":         "invalid domain url: no path",
			"https://a.example?x=1":         "invalid domain url: no query",
			"https://a.example#f":           "invalid domain url: no fragment",
			"https://user:pw@a.example":     "invalid domain url: user information is not allowed",
			"ftp://a.example":               "invalid domain url: the scheme must be https",
			"a.example":                     "invalid domain url: the scheme must be https",
			"https://":                      "invalid domain url: no host",
			"https://a.example:99999":       "invalid domain url: bad port",
			"https://a.example:":            "invalid domain url: empty port",
			"https://bad_host.example":      "invalid domain url: bad host name",
			" https://a.example":            "invalid domain url: whitespace or backslash in the url",
			"https://a.example\\@b.example": "invalid domain url: whitespace or backslash in the url",
		} {
			admintest.Expect(t, su.Do(t, "POST", "/admin/domains", map[string]any{"url": url}), 400, msg)
		}
		admintest.Expect(t, su.Do(t, "POST", "/admin/domains", []byte(`{"url": 5}`)), 400, "invalid request body")
		admintest.Expect(t, su.Do(t, "POST", "/admin/domains", []byte(`nope`)), 400, "invalid request body")

		// The primary cannot be deleted; unknown ids are 404.
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/domains/"+primary.ID, nil), 400, "the primary domain cannot be deleted")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/domains/nope", nil), 404, "domain not found")
		admintest.Expect(t, su.Do(t, "POST", "/admin/domains/nope/primary", nil), 404, "domain not found")

		// Setting a primary unsets the previous one.
		r = su.Do(t, "POST", "/admin/domains/"+second.ID+"/primary", nil)
		admintest.Expect(t, r, 204, "")
		list = listDomains(t, su)
		if len(list) != 3 || list[0].ID != second.ID || !list[0].IsPrimary || list[1].IsPrimary || list[2].IsPrimary {
			t.Fatalf("after switch: %+v", list)
		}
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/domains/"+primary.ID, nil), 204, "")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/domains/"+primary.ID, nil), 404, "domain not found")
		if list = listDomains(t, su); len(list) != 2 {
			t.Fatalf("after delete: %+v", list)
		}
		if n := len(srv.Events(t, "domain")); n != 4 { // two created, one made primary, one deleted
			t.Fatalf("domain events: %d", n)
		}

		// settings:manage is required.
		other := srv.Caller(t, admins.StatsRead)
		for _, route := range [][2]string{{"GET", "/admin/domains"}, {"POST", "/admin/domains"}, {"DELETE", "/admin/domains/" + third.ID}, {"POST", "/admin/domains/" + third.ID + "/primary"}} {
			admintest.Expect(t, other.Do(t, route[0], route[1], map[string]any{"url": "https://x.example"}), 403, "insufficient permissions")
		}
	})
}

// TestDomainsHTTPSUnlessLoopback: with a public PUBLIC_URL, only https
// domains are accepted.
func TestDomainsHTTPSUnlessLoopback(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := serveDomains(t, open(t), "https://appview.example")
		admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/domains", map[string]any{"url": "http://other.example"}), 400,
			"invalid domain url: the scheme must be https (http only when PUBLIC_URL is a loopback address)")
		addDomain(t, srv.Super, "https://other.example")
		if list := listDomains(t, srv.Super); len(list) != 2 || list[0].URL != "https://appview.example" || !list[0].IsPrimary {
			t.Fatalf("%+v", list)
		}
	})
}

// TestPublicURLChange: when PUBLIC_URL changes between boots, the primary
// domain stays, the new origin is added as an ordinary domain and a
// warning says so.
func TestPublicURLChange(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := serveDomains(t, open(t), "https://first.example")
		var logs bytes.Buffer
		domainsService(t, srv.World, "https://second.example/base", slog.New(slog.NewTextHandler(&logs, nil)))
		domainsService(t, srv.World, "https://second.example", nil) // and again: still two
		list := listDomains(t, srv.Super)
		if len(list) != 2 || list[0].URL != "https://first.example" || !list[0].IsPrimary || list[1].URL != "https://second.example" || list[1].IsPrimary {
			t.Fatalf("%+v", list)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "PUBLIC_URL is not the primary domain") {
			t.Fatalf("no warning: %s", logs.String())
		}
	})
}

func fieldNames(m map[string]any) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
