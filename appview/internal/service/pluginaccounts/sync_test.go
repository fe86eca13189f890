package pluginaccounts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/pluginaccounts"
	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// fakePlugin answers each export with a function of its input.
type fakePlugin struct {
	answers map[string]func(in []byte) (json.RawMessage, error)
	calls   []string
}

func (f *fakePlugin) Auth(_ context.Context, _, export string, input any) (json.RawMessage, error) {
	f.calls = append(f.calls, export)
	in, _ := json.Marshal(input)
	fn := f.answers[export]
	if fn == nil {
		return nil, fmt.Errorf("no answer for %s", export)
	}
	return fn(in)
}

// fakeWriter records writes; collections in invalid are refused like the
// write path refuses a record without a lexicon; down fails every write.
type fakeWriter struct {
	written []string
	invalid map[string]bool
	down    bool
}

func (w *fakeWriter) WriteRecord(_ context.Context, c *caller.User, collection, rkey string, _ json.RawMessage) (writepath.Answer, error) {
	switch {
	case w.down:
		return writepath.Answer{}, errors.New("connection refused")
	case w.invalid[collection]:
		return writepath.Answer{}, fail.New(fail.Invalid, "invalid record: no record lexicon for the collection")
	}
	w.written = append(w.written, c.DID+"/"+collection+"/"+rkey)
	return writepath.Answer{Status: http.StatusOK}, nil
}

func answer(s string) func([]byte) (json.RawMessage, error) {
	return func([]byte) (json.RawMessage, error) { return json.RawMessage(s), nil }
}

// TestSyncAnswers checks what Lexview does with each kind of sync answer,
// on both databases: malformed answers write nothing and keep the cursor;
// records the instance refuses are counted, the rest written; expired
// tokens are refreshed first; a plugin that keeps asking for a refresh
// fails.
func TestSyncAnswers(t *testing.T) {
	sealer, err := oauth.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	caller := &caller.User{DID: "did:plc:ann", Via: caller.ViaDPoP, SessionID: "s1"}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		connect := func(tokens string) {
			t.Helper()
			sealed, err := sealer.Seal("plugin:demo:did:plc:ann:tokens", []byte(tokens))
			if err != nil {
				t.Fatal(err)
			}
			if err := store.PutPluginAccount(ctx, storage.PluginAccount{PluginID: "demo", DID: "did:plc:ann", SessionID: "s1",
				ExternalID: "x", SealedTokens: sealed, Cursor: "c0"}); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			name     string
			tokens   string
			answers  map[string]func([]byte) (json.RawMessage, error)
			down     bool
			wantErr  string // "" for success
			written  int
			refused  int
			cursor   string
			refresh  bool
			wantCall []string
		}{
			{name: "records", tokens: `{"a":"1"}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[{"collection":"com.example.item","rkey":"k1","record":{"text":"x"}},
					{"collection":"com.example.nolexicon","record":{"text":"y"}},{"collection":"com.example.item","record":{}}],"cursor":"c1"}`)},
				written: 2, refused: 1, cursor: "c1", wantCall: []string{plugins.ExportSync}},
			{name: "no cursor keeps it", tokens: `{"a":"1"}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[]}`)}, cursor: "c0", wantCall: []string{plugins.ExportSync}},
			{name: "not an object", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`[1,2]`)}, wantErr: "malformed sync answer", cursor: "c0"},
			{name: "records not a list", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":"nope"}`)}, wantErr: "malformed sync answer", cursor: "c0"},
			{name: "unknown field", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[],"recrods":[]}`)}, wantErr: "malformed sync answer", cursor: "c0"},
			{name: "collection not an NSID", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[{"collection":"not an nsid","record":{}}]}`)}, wantErr: "not an NSID", cursor: "c0"},
			{name: "record not an object", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[{"collection":"com.example.item","record":"text"}]}`)}, wantErr: "not a JSON object", cursor: "c0"},
			{name: "too many records", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[` + strings.Repeat(`{"collection":"com.example.item","record":{}},`, 100) +
					`{"collection":"com.example.item","record":{}}]}`)}, wantErr: "more than 100", cursor: "c0"},
			{name: "plugin error", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: func([]byte) (json.RawMessage, error) { return nil, errors.New("provider down") }},
				wantErr: "provider down", cursor: "c0"},
			{name: "PDS down keeps the cursor", tokens: `{}`, down: true, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportSync: answer(`{"records":[{"collection":"com.example.item","record":{}}],"cursor":"c9"}`)},
				wantErr: "writing to the PDS", cursor: "c0"},
			{name: "expired tokens refreshed first", tokens: fmt.Sprintf(`{"expires_at":%d}`, now.Add(-time.Minute).UnixMilli()),
				answers: map[string]func([]byte) (json.RawMessage, error){
					plugins.ExportRefresh: answer(`{"access_token":"new"}`),
					plugins.ExportSync: func(in []byte) (json.RawMessage, error) {
						if !strings.Contains(string(in), `"access_token":"new"`) {
							return nil, errors.New("sync got the old tokens: " + string(in))
						}
						return json.RawMessage(`{"records":[],"cursor":"c2"}`), nil
					}},
				refresh: true, cursor: "c2", wantCall: []string{plugins.ExportRefresh, plugins.ExportSync}},
			{name: "needs_refresh twice", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportRefresh: answer(`{"access_token":"new"}`),
				plugins.ExportSync:    answer(`{"needs_refresh":true}`)},
				wantErr: "still needs a refresh", cursor: "c0", refresh: true,
				wantCall: []string{plugins.ExportSync, plugins.ExportRefresh, plugins.ExportSync}},
			{name: "malformed refreshed tokens", tokens: `{}`, answers: map[string]func([]byte) (json.RawMessage, error){
				plugins.ExportRefresh: answer(`"a string"`),
				plugins.ExportSync:    answer(`{"needs_refresh":true}`)},
				wantErr: "malformed tokens", cursor: "c0"},
		}
		for _, tc := range cases {
			connect(tc.tokens)
			fp := &fakePlugin{answers: tc.answers}
			w := &fakeWriter{invalid: map[string]bool{"com.example.nolexicon": true}, down: tc.down}
			svc := pluginaccounts.New(pluginaccounts.Options{Plugins: fp, Store: store, Writer: w, Sealer: sealer,
				Now: func() time.Time { return now }})
			res, err := svc.Sync(ctx, "demo", caller)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			}
			if tc.wantErr != "" && fail.KindOf(err) != fail.Upstream && !tc.down {
				t.Fatalf("%s: kind %v", tc.name, fail.KindOf(err))
			}
			if tc.wantErr != "" && len(w.written) != 0 && !tc.down {
				t.Fatalf("%s: wrote %v", tc.name, w.written)
			}
			if res.Written != tc.written || len(res.Refused) != tc.refused || res.Refreshed != tc.refresh {
				t.Fatalf("%s: result %+v", tc.name, res)
			}
			if tc.wantCall != nil && strings.Join(fp.calls, ",") != strings.Join(tc.wantCall, ",") {
				t.Fatalf("%s: calls %v", tc.name, fp.calls)
			}
			acct, err := store.GetPluginAccount(ctx, "demo", "did:plc:ann")
			if err != nil || acct.Cursor != tc.cursor {
				t.Fatalf("%s: stored cursor %q (%v), want %q", tc.name, acct.Cursor, err, tc.cursor)
			}
			if tc.refresh {
				tok, err := sealer.Open("plugin:demo:did:plc:ann:tokens", acct.SealedTokens)
				if err != nil || string(tok) != `{"access_token":"new"}` {
					t.Fatalf("%s: stored tokens %s %v", tc.name, tok, err)
				}
			}
		}
		// Tokens sealed for another user do not open for this one.
		sealed, _ := sealer.Seal("plugin:demo:did:plc:bob:tokens", []byte(`{}`))
		_ = store.PutPluginAccount(ctx, storage.PluginAccount{PluginID: "demo", DID: "did:plc:ann", SessionID: "s1", SealedTokens: sealed})
		svc := pluginaccounts.New(pluginaccounts.Options{Plugins: &fakePlugin{}, Store: store, Writer: &fakeWriter{}, Sealer: sealer})
		if _, err := svc.Sync(ctx, "demo", caller); err == nil || !strings.Contains(err.Error(), "opening the stored tokens") {
			t.Fatalf("tokens of another user: %v", err)
		}
	})
}
