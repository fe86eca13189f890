package instance_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func TestSettings(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		ctx := context.Background()
		if r := su.Do(t, "GET", "/admin/settings", nil); r.Status != 200 || string(r.Raw) != `{}` {
			t.Fatalf("empty: %d %s", r.Status, r.Raw)
		}
		if got := env.App.Setting(ctx, "app_name", "From Env"); got != "From Env" {
			t.Fatalf("unset setting resolves to %q", got)
		}

		r := su.Do(t, "PUT", "/admin/settings/app_name", map[string]any{"value": "My View"})
		if r.Status != 200 || string(r.Raw) != `{"key":"app_name","value":"My View"}` {
			t.Fatalf("put: %d %s", r.Status, r.Raw)
		}
		su.Do(t, "PUT", "/admin/settings/app_name", map[string]any{"value": "Renamed"})
		long := strings.Repeat("k", 100)
		if r := su.Do(t, "PUT", "/admin/settings/"+long, map[string]any{"value": ""}); r.Status != 200 {
			t.Fatalf("100-character key with an empty value: %d %s", r.Status, r.Raw)
		}
		if r := su.Do(t, "PUT", "/admin/settings/terms_of_service_url", map[string]any{"value": "https://x.test/tos"}); r.Status != 200 {
			t.Fatalf("put: %d %s", r.Status, r.Raw)
		}
		var all map[string]string
		su.Do(t, "GET", "/admin/settings", nil).JSON(t, &all)
		if len(all) != 3 || all["app_name"] != "Renamed" || all[long] != "" || all["terms_of_service_url"] != "https://x.test/tos" {
			t.Fatalf("list: %v", all)
		}
		if got := env.App.Setting(ctx, "app_name", "From Env"); got != "Renamed" {
			t.Fatalf("the setting does not override the environment: %q", got)
		}

		if r := su.Do(t, "DELETE", "/admin/settings/app_name", nil); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Raw)
		}
		if r := su.Do(t, "DELETE", "/admin/settings/app_name", nil); r.Status != 404 || r.Error(t) != "setting not found" {
			t.Fatalf("delete unset: %d %s", r.Status, r.Raw)
		}
		if got := env.App.Setting(ctx, "app_name", "From Env"); got != "From Env" {
			t.Fatalf("after delete the environment does not apply again: %q", got)
		}
		if ev := audited(t, env.Store, "setting.updated"); len(ev) != 4 || ev[3].Subject != "app_name" ||
			ev[3].ActorDID != su.Account.DID.String() {
			t.Fatalf("setting.updated: %+v", ev)
		}
		if ev := audited(t, env.Store, "setting.deleted"); len(ev) != 1 || ev[0].Subject != "app_name" {
			t.Fatalf("setting.deleted: %+v", ev)
		}

		badKey := "invalid setting key: use 1 to 100 characters of a-z, 0-9, _, . and -"
		for name, tc := range map[string]struct {
			method, path string
			body         any
			msg          string
		}{
			"upper case":      {"PUT", "/admin/settings/AppName", map[string]any{"value": "x"}, badKey},
			"too long":        {"PUT", "/admin/settings/" + long + "k", map[string]any{"value": "x"}, badKey},
			"space":           {"PUT", "/admin/settings/a%20b", map[string]any{"value": "x"}, badKey},
			"slash":           {"PUT", "/admin/settings/a%2Fb", map[string]any{"value": "x"}, badKey},
			"reserved":        {"PUT", "/admin/settings/db-info", map[string]any{"value": "x"}, "reserved setting key"},
			"no value":        {"PUT", "/admin/settings/app_name", map[string]any{}, "value is required"},
			"null value":      {"PUT", "/admin/settings/app_name", map[string]any{"value": nil}, "value is required"},
			"number value":    {"PUT", "/admin/settings/app_name", map[string]any{"value": 5}, "invalid request body"},
			"malformed":       {"PUT", "/admin/settings/app_name", []byte(`{"value":`), "invalid request body"},
			"no body":         {"PUT", "/admin/settings/app_name", nil, "invalid request body"},
			"delete bad key":  {"DELETE", "/admin/settings/Bad", nil, badKey},
			"delete reserved": {"DELETE", "/admin/settings/db-info", nil, "reserved setting key"},
		} {
			r := su.Do(t, tc.method, tc.path, tc.body)
			if r.Status != 400 || r.Error(t) != tc.msg {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
	})
}

// Minimal bodies that http.DetectContentType recognises.
var (
	pngBody  = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)
	jpegBody = append([]byte("\xff\xd8\xff\xe0"), make([]byte, 32)...)
	gifBody  = []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")
	webpBody = []byte("RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00")
	svgBody  = []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>`)
)

func TestLogo(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		ctx := context.Background()
		put := func(contentType string, body []byte) (int, string) {
			r := env.Do(t, "PUT", "/admin/settings/logo", body,
				"Authorization", "Bearer "+su.Account.ServiceAuth(t), "Content-Type", contentType)
			if r.Status == 204 {
				return 204, ""
			}
			return r.Status, r.Error(t)
		}

		if r := su.Do(t, "DELETE", "/admin/settings/logo", nil); r.Status != 404 || r.Error(t) != "logo not found" {
			t.Fatalf("delete without a logo: %d %s", r.Status, r.Raw)
		}
		for _, tc := range []struct {
			contentType string
			body        []byte
		}{
			{"image/png", pngBody}, {"image/jpeg", jpegBody}, {"image/gif", gifBody}, {"image/webp", webpBody},
			{"image/svg+xml", svgBody}, {"IMAGE/PNG; foo=bar", pngBody},
		} {
			if status, msg := put(tc.contentType, tc.body); status != 204 {
				t.Fatalf("%s: %d %s", tc.contentType, status, msg)
			}
			b, err := env.Store.GetBlob(ctx, "logo")
			if err != nil || !bytes.Equal(b.Data, tc.body) || !strings.HasPrefix(strings.ToLower(tc.contentType), b.ContentType) {
				t.Fatalf("%s stored as %q (%d bytes), %v", tc.contentType, b.ContentType, len(b.Data), err)
			}
		}
		// The logo is a blob, not a setting: the literal route won over
		// PUT /admin/settings/{key}.
		if r := su.Do(t, "GET", "/admin/settings", nil); string(r.Raw) != `{}` {
			t.Fatalf("logo leaked into settings: %s", r.Raw)
		}
		if ev := audited(t, env.Store, "logo.updated"); len(ev) != 6 || ev[0].Subject != "logo" {
			t.Fatalf("logo.updated: %+v", ev)
		}

		exact := append(bytes.Clone(pngBody), make([]byte, 1<<20-len(pngBody))...)
		if status, msg := put("image/png", exact); status != 204 {
			t.Fatalf("exactly 1 MiB: %d %s", status, msg)
		}
		for name, tc := range map[string]struct {
			contentType string
			body        []byte
			status      int
		}{
			"over 1 MiB":          {"image/png", append(bytes.Clone(exact), 0), 413},
			"json":                {"application/json", []byte(`{"value":"x"}`), 400},
			"no type":             {"", pngBody, 400},
			"text":                {"text/plain", []byte("hello"), 400},
			"bmp":                 {"image/bmp", []byte("BM\x00\x00"), 400},
			"empty":               {"image/png", nil, 400},
			"type mismatch":       {"image/png", gifBody, 400},
			"jpeg claiming webp":  {"image/webp", jpegBody, 400},
			"not an image at all": {"image/jpeg", []byte("<html><body>hi</body></html>"), 400},
			"svg without svg":     {"image/svg+xml", []byte("<html></html>"), 400},
			"binary svg":          {"image/svg+xml", append([]byte("<svg \xff\xfe"), pngBody...), 400},
		} {
			if status, msg := put(tc.contentType, tc.body); status != tc.status || msg == "" {
				t.Errorf("%s: %d %q", name, status, msg)
			}
		}
		// A body of unknown length is cut off at the limit too.
		req, _ := http.NewRequest("PUT", env.URL+"/admin/settings/logo",
			io.MultiReader(bytes.NewReader(exact), strings.NewReader("x")))
		req.Header.Set("Authorization", "Bearer "+su.Account.ServiceAuth(t))
		req.Header.Set("Content-Type", "image/png")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 || req.ContentLength != 0 {
			t.Fatalf("chunked oversize: %d (content length %d)", resp.StatusCode, req.ContentLength)
		}
		// Refused uploads left the last good logo in place.
		if b, err := env.Store.GetBlob(ctx, "logo"); err != nil || len(b.Data) != 1<<20 {
			t.Fatalf("logo after refusals: %d bytes, %v", len(b.Data), err)
		}

		if r := su.Do(t, "DELETE", "/admin/settings/logo", nil); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Raw)
		}
		if _, err := env.Store.GetBlob(ctx, "logo"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("logo still stored: %v", err)
		}
		if r := su.Do(t, "DELETE", "/admin/settings/logo", nil); r.Status != 404 {
			t.Fatalf("second delete: %d %s", r.Status, r.Raw)
		}
		if ev := audited(t, env.Store, "logo.deleted"); len(ev) != 1 {
			t.Fatalf("logo.deleted: %+v", ev)
		}
	})
}
