package appfolder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// remote is a Target over a running instance's admin API.
type remote struct {
	base   string // the instance's URL, without a trailing slash
	key    string // an admin API key (hv_...)
	client *http.Client
}

// Remote returns the Target of the instance at baseURL, reached through
// its admin API with the admin API key adminKey. Like Local's, its
// definition leaves out the network lexicons. The key needs
// lexicons:read, lexicons:create, lexicons:delete, scripts:read,
// scripts:manage, indexes:read, indexes:manage and
// script-variables:read. A nil client is one whose requests time out
// after RemoteTimeout. It is not the guarded client of the instance's
// own outbound calls: the instance is the operator's, often on this
// machine or its private network.
func Remote(baseURL, adminKey string, client *http.Client) Target {
	if client == nil {
		client = &http.Client{Timeout: RemoteTimeout}
	}
	return remote{base: strings.TrimRight(baseURL, "/"), key: adminKey, client: client}
}

// RemoteTimeout bounds each admin API request of Remote's default client.
const RemoteTimeout = 2 * time.Minute

// apiError is an admin API answer that is not a success.
type apiError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// call sends body (nil for none) as JSON and decodes a 2xx answer into
// out (nil to ignore it).
func (t remote) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		return &apiError{Method: method, Path: path, Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// remoteLexicon is GET /admin/lexicons/{id}.
type remoteLexicon struct {
	ID               string          `json:"id"`
	Revision         int             `json:"revision"`
	LexiconType      string          `json:"lexicon_type"`
	Backfill         bool            `json:"backfill"`
	TargetCollection *string         `json:"target_collection"`
	LexiconJSON      json.RawMessage `json:"lexicon_json"`
	Script           *string         `json:"script"`
	IndexHook        *string         `json:"index_hook"`
}

func (t remote) lexicon(ctx context.Context, id string) (Lexicon, error) {
	var r remoteLexicon
	if err := t.call(ctx, "GET", "/admin/lexicons/"+url.PathEscape(id), nil, &r); err != nil {
		return Lexicon{}, err
	}
	l := Lexicon{ID: r.ID, Kind: lexicon.Kind(r.LexiconType), Document: r.LexiconJSON, Revision: r.Revision,
		Script: deref(r.Script), IndexHook: deref(r.IndexHook)}
	if l.Kind == lexicon.KindRecord {
		l.Backfill = new(r.Backfill)
	} else {
		l.TargetCollection = deref(r.TargetCollection)
	}
	return l, nil
}

// remoteScript is an entry of GET /admin/scripts, and GET
// /admin/scripts/{id} with its source.
type remoteScript struct {
	ID      string `json:"id"`
	Trigger string `json:"trigger"`
	Source  string `json:"source"`
}

func (t remote) scripts(ctx context.Context) ([]remoteScript, error) {
	var list struct {
		Scripts []remoteScript `json:"scripts"`
	}
	err := t.call(ctx, "GET", "/admin/scripts", nil, &list)
	return list.Scripts, err
}

// remoteIndex is an entry of GET /admin/indexes.
type remoteIndex struct {
	ID         int64                  `json:"id"`
	Collection string                 `json:"collection"`
	Path       string                 `json:"path"`
	Kind       storage.FieldIndexKind `json:"kind"`
}

func (t remote) indexes(ctx context.Context, collection string) ([]remoteIndex, error) {
	path := "/admin/indexes"
	if collection != "" {
		path += "?collection=" + url.QueryEscape(collection)
	}
	var list struct {
		Indexes []remoteIndex `json:"indexes"`
	}
	err := t.call(ctx, "GET", path, nil, &list)
	return list.Indexes, err
}

func (t remote) Read(ctx context.Context) (*Definition, error) {
	def := &Definition{Lexicons: map[string]Lexicon{}, Scripts: map[string]string{}}
	var lexicons []struct {
		ID string `json:"id"`
	}
	if err := t.call(ctx, "GET", "/admin/lexicons", nil, &lexicons); err != nil {
		return nil, err
	}
	var network []struct {
		NSID string `json:"nsid"`
	}
	if err := t.call(ctx, "GET", "/admin/network-lexicons", nil, &network); err != nil {
		return nil, err
	}
	fromNetwork := map[string]bool{} // not the app's: fetched from their authority
	for _, n := range network {
		fromNetwork[n.NSID] = true
	}
	for _, s := range lexicons {
		if fromNetwork[s.ID] {
			continue
		}
		l, err := t.lexicon(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		def.Lexicons[l.ID] = l
	}
	list, err := t.scripts(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		var full remoteScript
		if err := t.call(ctx, "GET", "/admin/scripts/"+url.PathEscape(s.ID), nil, &full); err != nil {
			return nil, err
		}
		def.Scripts[full.Trigger] = full.Source
	}
	indexes, err := t.indexes(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, f := range indexes {
		def.Indexes = append(def.Indexes, storage.FieldIndexSpec{Collection: f.Collection, Path: f.Path, Kind: f.Kind})
	}
	sortIndexes(def.Indexes)
	var vars struct {
		Variables []struct {
			Key string `json:"key"`
		} `json:"variables"`
	}
	if err := t.call(ctx, "GET", "/admin/script-variables", nil, &vars); err != nil {
		return nil, err
	}
	for _, v := range vars.Variables {
		def.Variables = append(def.Variables, v.Key)
	}
	return def, nil
}

func (t remote) CheckScript(ctx context.Context, source string) error {
	err := t.call(ctx, "POST", "/admin/scripts/check", map[string]string{"source": source}, nil)
	if e := (*apiError)(nil); errors.As(err, &e) && e.Status == http.StatusBadRequest {
		return errors.New(e.Message) // the check's own message, as the local check says it
	}
	return err
}

func (t remote) PutLexicon(ctx context.Context, l Lexicon) ([]string, error) {
	body := map[string]any{"lexicon_json": l.Document, "script": l.Script, "index_hook": l.IndexHook}
	if l.Kind != lexicon.KindRecord && l.TargetCollection != "" {
		body["target_collection"] = l.TargetCollection
	}
	backfill := l.Backfill
	if backfill == nil && l.Kind == lexicon.KindRecord {
		old, err := t.lexicon(ctx, l.ID)
		var e *apiError
		switch {
		case err == nil:
			backfill = old.Backfill // a folder that does not say keeps the instance's
		case !errors.As(err, &e) || e.Status != http.StatusNotFound:
			return nil, err
		}
	}
	if backfill != nil {
		body["backfill"] = *backfill
	}
	var out struct {
		Warnings []string `json:"warnings"`
	}
	err := t.call(ctx, "POST", "/admin/lexicons", body, &out)
	return out.Warnings, err
}

func (t remote) DeleteLexicon(ctx context.Context, id string) error {
	return t.call(ctx, "DELETE", "/admin/lexicons/"+url.PathEscape(id), nil, nil)
}

func (t remote) PutScript(ctx context.Context, trigger, source string) error {
	list, err := t.scripts(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		if s.Trigger == trigger { // PATCH keeps its description
			return t.call(ctx, "PATCH", "/admin/scripts/"+url.PathEscape(s.ID), map[string]string{"source": source}, nil)
		}
	}
	return t.call(ctx, "POST", "/admin/scripts", map[string]string{"trigger": trigger, "source": source}, nil)
}

func (t remote) DeleteScript(ctx context.Context, trigger string) error {
	list, err := t.scripts(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		if s.Trigger == trigger {
			return t.call(ctx, "DELETE", "/admin/scripts/"+url.PathEscape(s.ID), nil, nil)
		}
	}
	return nil // already gone
}

func (t remote) DeclareIndex(ctx context.Context, spec storage.FieldIndexSpec) error {
	return t.call(ctx, "POST", "/admin/indexes", map[string]any{"collection": spec.Collection, "path": spec.Path, "kind": spec.Kind}, nil)
}

func (t remote) DropIndex(ctx context.Context, spec storage.FieldIndexSpec) error {
	list, err := t.indexes(ctx, spec.Collection)
	if err != nil {
		return err
	}
	for _, f := range list {
		if f.Path == spec.Path && f.Kind == spec.Kind {
			return t.call(ctx, "DELETE", fmt.Sprintf("/admin/indexes/%d", f.ID), nil, nil)
		}
	}
	return nil // already gone
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
