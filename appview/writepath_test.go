package appview_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// device is an app's device: its provisioned DPoP key and tokens.
type device struct {
	*testenv.Device
	signer  *oauth.Signer
	access  string
	session string
}

// call makes a DPoP-authenticated request to Lexview.
func (d *device) call(t *testing.T, method, path string, body any) testenv.Response {
	t.Helper()
	return d.Call(t, method, path, body)
}

// signIn signs a device of a confidential client in (testenv.Env.SignIn).
func signIn(t *testing.T, env *testenv.Env, pds *oauthtest.Server, key, secret, did string) *device {
	t.Helper()
	d := env.SignIn(t, pds, testenv.AppClient{Key: key, Secret: secret}, did)
	return &device{Device: d, signer: d.Signer, access: d.AccessToken, session: d.SessionID}
}

// putNoteLexicons uploads app.test.note with a default procedure
// (app.test.createNote) and query (app.test.listNotes) on it.
func putNoteLexicons(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`)},
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.createNote","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`), TargetCollection: "app.test.note"},
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.listNotes","defs":{"main":{"type":"query"}}}`), TargetCollection: "app.test.note"},
	} {
		if _, err := env.App.Lexicons().Put(context.Background(), up); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWritePath(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		putNoteLexicons(t, env)
		phone := signIn(t, env, pds, client.Key, secret, did)
		laptop := signIn(t, env, pds, client.Key, secret, did)

		// A procedure with only a client key is refused.
		if r := env.Do(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "x"}, "X-Client-Key", client.Key); r.Status != 401 {
			t.Fatalf("anonymous procedure: %d %s", r.Status, r.Raw)
		}
		// Create: proxied to the PDS (after its nonce challenge), indexed at once.
		r := phone.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "hello"})
		if r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		uri, _ := r.Object(t)["uri"].(string)
		if _, onPDS := pds.Record(uri); !strings.HasPrefix(uri, "at://"+did+"/app.test.note/") || !onPDS {
			t.Fatalf("create answer %s; on the PDS: %v", r.Raw, onPDS)
		}
		got := env.Do(t, "GET", "/xrpc/app.test.listNotes?uri="+uri, nil, "X-Client-Key", client.Key)
		if got.Status != 200 || got.Object(t)["record"].(map[string]any)["text"] != "hello" {
			t.Fatalf("read after write: %d %s", got.Status, got.Raw)
		}
		// Put with uri: the other device edits the record.
		r = laptop.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": uri, "text": "edited"})
		if r.Status != 200 {
			t.Fatalf("put: %d %s", r.Status, r.Raw)
		}
		got = env.Do(t, "GET", "/xrpc/app.test.listNotes?uri="+uri, nil, "X-Client-Key", client.Key)
		if got.Object(t)["record"].(map[string]any)["text"] != "edited" {
			t.Fatalf("read after put: %s", got.Raw)
		}
		// When the PDS reports the token expired, Lexview refreshes it at the
		// issuer and retries; the app keeps using the token it registered.
		pds.ExpireAccessTokens()
		for i, text := range []string{"after refresh", "again with the app's token"} {
			if r := phone.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": text}); r.Status != 200 {
				t.Fatalf("write %d after the PDS expired the token: %d %s", i, r.Status, r.Raw)
			}
		}
		if st := pds.Stats(); st.Refreshes != 1 {
			t.Fatalf("refreshes: %+v", st)
		}

		// A PDS error is forwarded unchanged.
		pds.FailNext("com.atproto.repo.createRecord", 400, "InvalidRequest", "no thanks")
		r = phone.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "refused"})
		if r.Status != 400 || r.Object(t)["error"] != "InvalidRequest" {
			t.Fatalf("forwarded error: %d %s", r.Status, r.Raw)
		}

		// Replayed proofs, proofs for another URL, and tokens of another device are refused.
		proof, _ := phone.signer.NewProof("POST", env.URL+"/xrpc/app.test.createNote", phone.access, "")
		hdr := []string{"X-Client-Key", client.Key, "Authorization", "DPoP " + phone.access, "DPoP", proof}
		env.Do(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "once"}, hdr...)
		if r := env.Do(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "twice"}, hdr...); r.Status != 401 {
			t.Fatalf("replayed proof: %d %s", r.Status, r.Raw)
		}
		other, _ := phone.signer.NewProof("POST", env.URL+"/xrpc/app.test.other", phone.access, "")
		if r := env.Do(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "x"},
			"X-Client-Key", client.Key, "Authorization", "DPoP "+phone.access, "DPoP", other); r.Status != 401 {
			t.Fatalf("proof for another URL: %d %s", r.Status, r.Raw)
		}
		swapped, _ := phone.signer.NewProof("POST", env.URL+"/xrpc/app.test.createNote", laptop.access, "")
		if r := env.Do(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "x"},
			"X-Client-Key", client.Key, "Authorization", "DPoP "+laptop.access, "DPoP", swapped); r.Status != 401 {
			t.Fatalf("token of another device: %d %s", r.Status, r.Raw)
		}

		// Devices: two, then the laptop signs itself out with DPoP.
		var devices []map[string]any
		env.Do(t, "GET", "/oauth/sessions/"+did+"/devices", nil, "X-Client-Key", client.Key, "X-Client-Secret", secret).JSON(t, &devices)
		if len(devices) != 2 {
			t.Fatalf("devices: %v", devices)
		}
		if r := laptop.call(t, "DELETE", "/oauth/sessions/"+did, nil); r.Status != 204 {
			t.Fatalf("DPoP sign-out: %d %s", r.Status, r.Raw)
		}
		env.Do(t, "GET", "/oauth/sessions/"+did+"/devices", nil, "X-Client-Key", client.Key, "X-Client-Secret", secret).JSON(t, &devices)
		if len(devices) != 1 || devices[0]["id"] != phone.session {
			t.Fatalf("after sign-out: %v", devices)
		}
		if r := env.Do(t, "DELETE", "/oauth/sessions/"+did+"/devices/"+storage.NewID(), nil, "X-Client-Key", client.Key, "X-Client-Secret", secret); r.Status != 404 {
			t.Fatalf("delete unknown device: %d", r.Status)
		}
		if r := env.Do(t, "DELETE", "/oauth/sessions/"+did+"/devices/"+phone.session, nil, "X-Client-Key", client.Key, "X-Client-Secret", secret); r.Status != 204 {
			t.Fatalf("delete device: %d %s", r.Status, r.Raw)
		}
		if r := phone.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "gone"}); r.Status != 401 {
			t.Fatalf("signed-out device still writes: %d %s", r.Status, r.Raw)
		}
		if stats := pds.Stats(); stats.NonceChallenges == 0 {
			t.Fatalf("the PDS never challenged for a nonce: %+v", stats)
		}
	})
}

func TestSessionRegistrationRefusals(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{})
	client, secret := env.NewClient(t, apiclients.NewClient{})
	auth := []string{"X-Client-Key", client.Key, "X-Client-Secret", secret}
	prov := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{}, auth...).Object(t)["provision_id"]
	base := map[string]any{
		"provision_id": prov, "did": "did:plc:someone", "access_token": "a", "refresh_token": "r",
		"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "scopes": "atproto",
		"pds_url": "https://pds.example", "issuer": "https://pds.example",
	}
	for name, change := range map[string]map[string]any{
		"no atproto scope":  {"scopes": "transition:generic"},
		"scope not granted": {"scopes": "atproto transition:generic"},
		"bad did":           {"did": "alice"},
		"bad expiry":        {"expires_at": "tomorrow"},
		"bad pds url":       {"pds_url": "ftp://x"},
		"unknown provision": {"provision_id": "hvp_nope"},
	} {
		body := map[string]any{}
		for k, v := range base {
			body[k] = v
		}
		for k, v := range change {
			body[k] = v
		}
		if r := env.Do(t, "POST", "/oauth/sessions", body, auth...); r.Status != 400 {
			t.Errorf("%s: %d %s", name, r.Status, r.Raw)
		}
	}
	if r := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{}, "X-Client-Key", client.Key, "X-Client-Secret", "hvs_wrong"); r.Status != 401 {
		t.Fatalf("wrong secret: %d", r.Status)
	}
	if r := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{}); r.Status != 401 || r.Error(t) != "requires an API client key" {
		t.Fatalf("no key: %d %s", r.Status, r.Raw)
	}
	// Public clients need an allowed Origin and an S256 challenge.
	pub, _ := env.NewClient(t, apiclients.NewClient{Type: "public", AllowedOrigins: []string{"https://web.app.test"}})
	if r := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{}, "X-Client-Key", pub.Key, "Origin", "https://web.app.test"); r.Status != 400 {
		t.Fatalf("public without PKCE: %d %s", r.Status, r.Raw)
	}
	challenge := oauth.PKCEChallenge("a-very-long-verifier-string-that-is-at-least-43-chars")
	if r := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{"pkce_challenge": challenge}, "X-Client-Key", pub.Key, "Origin", "https://evil.test"); r.Status != 401 {
		t.Fatalf("public from a foreign origin: %d %s", r.Status, r.Raw)
	}
	if r := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{"pkce_challenge": challenge}, "X-Client-Key", pub.Key, "Origin", "https://web.app.test"); r.Status != 200 {
		t.Fatalf("public provision: %d %s", r.Status, r.Raw)
	}
}

// TestExpiredAccessToken checks that a registered access token past its
// expiry answers 401 token_expired.
func TestExpiredAccessToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Now: clock})
	pds := oauthtest.New(t, oauthtest.Options{})
	did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
	client, secret := env.NewClient(t, apiclients.NewClient{})
	if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{
		Document:         json.RawMessage(`{"lexicon":1,"id":"app.test.listNotes","defs":{"main":{"type":"query"}}}`),
		TargetCollection: "app.test.note",
	}); err != nil {
		t.Fatal(err)
	}
	d := env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, did)
	signer, err := oauth.NewSigner(d.Key, clock) // proofs follow the instance's clock
	if err != nil {
		t.Fatal(err)
	}
	d.Signer = signer
	if r := d.Call(t, "GET", "/xrpc/app.test.listNotes", nil); r.Status != 200 {
		t.Fatalf("fresh token: %d %s", r.Status, r.Raw)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour) // the registered token expired an hour ago
	mu.Unlock()
	if r := d.Call(t, "GET", "/xrpc/app.test.listNotes", nil); r.Status != 401 || r.Error(t) != "token_expired" {
		t.Fatalf("expired token: %d %s", r.Status, r.Raw)
	}
}

// TestProcedureValidatesAndReadsURI: an invalid record never reaches the
// PDS; a body `uri` replaces a record only when it names one of the
// caller's records of the procedure's collection, else it is a field.
func TestProcedureValidatesAndReadsURI(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{})
	pds := oauthtest.New(t, oauthtest.Options{})
	did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
	client, secret := env.NewClient(t, apiclients.NewClient{})
	ctx := context.Background()
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.bookmark","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"uri":{"type":"string"},"note":{"type":"string","maxLength":10}}}}}}`)},
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.saveBookmark","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`), TargetCollection: "app.test.bookmark"},
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.getBookmarks","defs":{"main":{"type":"query"}}}`), TargetCollection: "app.test.bookmark"},
	} {
		if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
			t.Fatal(err)
		}
	}
	dev := signIn(t, env, pds, client.Key, secret, did)

	// Invalid: refused with the validation error, and the PDS never sees it.
	r := dev.call(t, "POST", "/xrpc/app.test.saveBookmark", map[string]any{"uri": "https://a.example", "note": "far too long a note"})
	if r.Status != 400 || !strings.HasPrefix(r.Error(t), "invalid record: ") {
		t.Fatalf("invalid record: %d %s", r.Status, r.Raw)
	}
	r = dev.call(t, "POST", "/xrpc/app.test.saveBookmark", map[string]any{"uri": 42})
	if r.Status != 400 || !strings.HasPrefix(r.Error(t), "invalid record: ") {
		t.Fatalf("a uri field of the wrong type: %d %s", r.Status, r.Raw)
	}
	if n := len(pds.Writes()); n != 0 {
		t.Fatalf("%d invalid writes reached the PDS", n)
	}

	// `uri` values that are not one of the caller's bookmarks are fields.
	get := func(uri string) map[string]any {
		t.Helper()
		g := env.Do(t, "GET", "/xrpc/app.test.getBookmarks?uri="+uri, nil, "X-Client-Key", client.Key)
		if g.Status != 200 {
			t.Fatalf("get %s: %d %s", uri, g.Status, g.Raw)
		}
		rec, _ := g.Object(t)["record"].(map[string]any)
		return rec
	}
	_ = get
	var first string
	for _, value := range []string{"https://a.example/page", "at://did:plc:someoneelse/app.test.bookmark/3kabcdefghij2",
		"at://" + did + "/app.test.note/3kabcdefghij2", "at://" + did + "/app.test.bookmark"} {
		r := dev.call(t, "POST", "/xrpc/app.test.saveBookmark", map[string]any{"uri": value})
		if r.Status != 200 {
			t.Fatalf("bookmark of %s: %d %s", value, r.Status, r.Raw)
		}
		uri, _ := r.Object(t)["uri"].(string)
		stored, onPDS := pds.Record(uri)
		var fields map[string]any
		_ = json.Unmarshal(stored.Value, &fields)
		if !onPDS || fields["uri"] != value {
			t.Fatalf("bookmark of %s stored %s", value, stored.Value)
		}
		get(uri) // indexed (served with its AT URI as `uri`, the read shape)
		if first == "" {
			first = uri
		}
	}
	// The AT URI of one of the caller's bookmarks replaces it.
	r = dev.call(t, "POST", "/xrpc/app.test.saveBookmark", map[string]any{"uri": first, "note": "edited"})
	if r.Status != 200 || r.Object(t)["uri"] != first {
		t.Fatalf("replace: %d %s", r.Status, r.Raw)
	}
	if stored, _ := pds.Record(first); !strings.Contains(string(stored.Value), `"note":"edited"`) || strings.Contains(string(stored.Value), `"uri"`) {
		t.Fatalf("replaced record on the PDS: %s", stored.Value)
	}
	if len(pds.Writes()) != 5 {
		t.Fatalf("writes on the PDS: %d, want 5", len(pds.Writes()))
	}
}

// TestProcedureURIOfAnotherRecord: on a collection whose record has no
// `uri` property, a body's `uri` either names one of the caller's records
// of the collection (replaced) or is refused: another account's
// repository (403), another collection, no record or no AT URI (400).
// Nothing refused reaches the PDS.
func TestProcedureURIOfAnotherRecord(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		putNoteLexicons(t, env)
		dev := signIn(t, env, pds, client.Key, secret, did)

		r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "mine"})
		own, _ := r.Object(t)["uri"].(string)
		if r.Status != 200 || own == "" {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		rkey := own[strings.LastIndexByte(own, '/')+1:]
		for _, c := range []struct {
			uri    any
			status int
			err    string
		}{
			{"at://did:plc:someoneelse/app.test.note/" + rkey, 403, "cannot write to another account's repository"},
			{"at://did:plc:someoneelse/app.test.other/" + rkey, 403, "cannot write to another account's repository"},
			{"at://" + did + "/app.test.other/" + rkey, 400, "uri names a record of another collection"},
			{"at://" + did + "/app.test.note", 400, "invalid AT URI: it names no record"},
			{"at://alice.test/app.test.note/" + rkey, 400, "invalid AT URI: name the repository by its DID"},
			{"https://example.com/" + rkey, 400, "invalid AT URI"},
			{42, 400, "invalid AT URI"},
		} {
			r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": c.uri, "text": "hijack"})
			if r.Status != c.status || r.Error(t) != c.err {
				t.Errorf("uri %v: %d %s, want %d %q", c.uri, r.Status, r.Raw, c.status, c.err)
			}
		}
		if n := len(pds.Writes()); n != 1 {
			t.Fatalf("%d writes reached the PDS, want only the create", n)
		}
		// The caller's own record of the collection is replaced.
		r = dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": own, "text": "edited"})
		if r.Status != 200 || r.Object(t)["uri"] != own {
			t.Fatalf("put: %d %s", r.Status, r.Raw)
		}
		if stored, _ := pds.Record(own); !strings.Contains(string(stored.Value), `"edited"`) || len(pds.Writes()) != 2 {
			t.Fatalf("the put on the PDS: %s (%d writes)", stored.Value, len(pds.Writes()))
		}
	})
}

// TestProcedureUpstreamFailure: a procedure's write the PDS refuses is
// forwarded with the PDS's status and body; one whose PDS cannot be
// reached is the specification's upstream PDS failure, 500.
func TestProcedureUpstreamFailure(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		putNoteLexicons(t, env)
		dev := signIn(t, env, pds, client.Key, secret, did)

		pds.FailNext("com.atproto.repo.createRecord", 400, "InvalidRequest", "refused by the PDS")
		r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "refused"})
		if r.Status != 400 || !strings.Contains(string(r.Raw), "refused by the PDS") {
			t.Fatalf("a write the PDS refuses: %d %s", r.Status, r.Raw)
		}
		pds.Close()
		r = dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "unreachable"})
		if r.Status != 500 || r.Error(t) != "upstream PDS failure" {
			t.Fatalf("a write to an unreachable PDS: %d %s", r.Status, r.Raw)
		}
	})
}
