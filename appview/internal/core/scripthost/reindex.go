package scripthost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// maxFetchedRecord bounds a record fetched for a reindex.
const maxFetchedRecord = 2 << 20

// ReindexDeadLetter fetches the record fresh from its author's PDS and runs
// it through the full pipeline: its record-event script (if one is bound)
// and the batch writer. A record the PDS no longer has is indexed as a
// delete.
func (r *Runtime) ReindexDeadLetter(ctx context.Context, d storage.DeadLetter) error {
	c, err := r.fetch(ctx, d)
	if err != nil {
		return err
	}
	snap := r.current()
	if _, ok := snap.eventScript(c.Collection, c.Op); ok {
		res := r.runEvent(ctx, snap, c)
		if res.err != nil {
			return res.err
		}
		if !res.keep {
			return nil
		}
		c = res.change
	}
	return r.write(ctx, "reindex", c)
}

// fetch reads the dead letter's record from its PDS with getRecord.
func (r *Runtime) fetch(ctx context.Context, d storage.DeadLetter) (storage.Change, error) {
	did, err := syntax.ParseDID(d.DID)
	if err != nil {
		return storage.Change{}, fmt.Errorf("invalid DID %q", d.DID)
	}
	if r.opt.Directory == nil {
		return storage.Change{}, errors.New("no identity directory to find the PDS")
	}
	ident, err := r.opt.Directory.LookupDID(ctx, did)
	if err != nil {
		return storage.Change{}, fmt.Errorf("resolving %s: %w", d.DID, err)
	}
	pds := ident.PDSEndpoint()
	if pds == "" {
		return storage.Change{}, fmt.Errorf("%s has no PDS", d.DID)
	}
	q := url.Values{"repo": {d.DID}, "collection": {d.Collection}, "rkey": {d.RKey}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(pds, "/")+"/xrpc/com.atproto.repo.getRecord?"+q.Encode(), nil)
	if err != nil {
		return storage.Change{}, err
	}
	resp, err := r.host().HTTPClient().Do(req)
	if err != nil {
		return storage.Change{}, fmt.Errorf("fetching the record: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFetchedRecord+1))
	if err != nil {
		return storage.Change{}, fmt.Errorf("fetching the record: %w", err)
	}
	base := storage.Change{DID: d.DID, Collection: d.Collection, RKey: d.RKey}
	var out struct {
		Error string          `json:"error"`
		CID   string          `json:"cid"`
		Value json.RawMessage `json:"value"`
	}
	_ = json.Unmarshal(body, &out)
	switch {
	case resp.StatusCode == http.StatusOK && out.CID != "" && len(out.Value) > 0 && len(body) <= maxFetchedRecord:
		base.Op, base.CID, base.Record = storage.OpUpdate, out.CID, out.Value
		if d.Action == string(storage.OpCreate) {
			base.Op = storage.OpCreate
		}
		return base, nil
	case resp.StatusCode == http.StatusNotFound || out.Error == "RecordNotFound":
		base.Op = storage.OpDelete
		return base, nil
	}
	return storage.Change{}, fmt.Errorf("the PDS answered %d to getRecord: %s", resp.StatusCode, truncate(string(body), 200))
}
