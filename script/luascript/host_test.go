package luascript

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// nopHost is a Host for tests that touch no storage.
type nopHost struct{}

var errNoHost = errors.New("not available in this test")

func (nopHost) QueryRecords(context.Context, storage.RecordQuery) (storage.RecordQueryPage, error) {
	return storage.RecordQueryPage{}, errNoHost
}
func (nopHost) CountMatching(context.Context, storage.RecordQuery) (int64, error) {
	return 0, errNoHost
}
func (nopHost) SearchRecords(context.Context, storage.SearchQuery) (storage.SearchPage, error) {
	return storage.SearchPage{}, errNoHost
}
func (nopHost) GetRecords(context.Context, []string) (map[string]storage.Record, error) {
	return nil, errNoHost
}
func (nopHost) RawQuery(context.Context, string, []any, int, int64) (storage.RawResult, error) {
	return storage.RawResult{}, errNoHost
}
func (nopHost) GetRecord(context.Context, string) (storage.Record, error) {
	return storage.Record{}, storage.ErrNotFound
}
func (nopHost) Vars(context.Context) (map[string]string, error) { return map[string]string{}, nil }
func (nopHost) Log(context.Context, *script.Invocation, string) {}
func (nopHost) WriteRecord(context.Context, *script.Caller, script.RecordWrite) (script.WriteResult, error) {
	return script.WriteResult{}, errNoHost
}
func (nopHost) LinkedRepos(context.Context) ([]script.LinkedRepo, error) { return nil, errNoHost }
func (nopHost) CallPlugin(context.Context, *script.Invocation, string, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("no plugins")
}

func (nopHost) WriteLinkedRecord(context.Context, *script.Invocation, script.LinkedWrite) (script.WriteResult, error) {
	return script.WriteResult{}, errNoHost
}
func (nopHost) Labels(context.Context, []string) (map[string][]storage.Label, error) {
	return nil, errNoHost
}
func (nopHost) XRPC(context.Context, *script.Invocation, string, string, url.Values, []byte) (int, []byte, error) {
	return 0, nil, errNoHost
}
func (nopHost) HTTPClient() *http.Client { return http.DefaultClient }
func (nopHost) Backlinks(context.Context, storage.BacklinkQuery) (storage.BacklinkPage, error) {
	return storage.BacklinkPage{}, errNoHost
}
func (nopHost) CountBacklinks(context.Context, storage.BacklinkCountQuery) (storage.BacklinkCount, error) {
	return storage.BacklinkCount{}, errNoHost
}
