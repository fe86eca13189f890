package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// The link index drives a query whose filter holds, at its top level, an
// equality of a field to a link (storage.IsLinkTarget) when no declared
// value index serves it: `db.count{filter = {field = "subject.uri",
// value = post}}` reads the post's links, not the collection. The field's
// path must be plain names (no array index): it is then the links' own
// path in the notation of the link index. The whole filter still applies
// to the records read, so the answer is a scan's: every record whose
// field holds the link has that link in the index, unless its links were
// skipped (more than storage.MaxLinksPerRecord, deeper than
// storage.MaxLinkDepth), and such records are marked (skippedLinksTarget)
// and read too. Records written by a script's db.raw are the exception
// (they have no links: docs/queries.md).

// linkDrive is the part of a plan read from the link index: the ids (in
// link_targets) of the target and, if the collection has records with
// skipped links, of their mark.
type linkDrive struct {
	path string
	ids  []int64
	// records is the number of links to the target: the answer of a count
	// whose filter is the equality alone, when no record is marked.
	records int64
	// sole: the equality is the whole filter.
	sole bool
	// marked: the collection has records whose links were skipped.
	marked bool
}

// linkIndexCacheTTL is how long the link index is taken as complete
// after it was last read so (its background pass is done).
const linkIndexCacheTTL = 2 * time.Second

// linksIndexed reports whether every stored record's links are indexed.
func (db *DB) linksIndexed(ctx context.Context) (bool, error) {
	if at := db.links.doneAt.Load(); at != 0 && time.Since(time.Unix(0, at)) < linkIndexCacheTTL {
		return true, nil
	}
	var done bool
	if err := db.reader.QueryRowContext(ctx, `SELECT done FROM link_index_state WHERE id = 1`).Scan(&done); err != nil {
		return false, fmt.Errorf("link index state: %w", err)
	}
	if done {
		db.links.doneAt.Store(time.Now().UnixNano())
	}
	return done, nil
}

// planLink returns the link drive of rq's filter, or nil.
func (db *DB) planLink(ctx context.Context, rq *recordQuery) (*linkDrive, error) {
	f := rq.q.Filter
	members := []storage.Filter{*f}
	if f.And != nil {
		members = f.And
	}
	for i := range members {
		c, ok := asIndexCond(&members[i])
		if !ok || c.op != "=" || c.col != "str" || strings.Contains(c.path, "[") || len(c.path) > storage.MaxLinkPathLen {
			continue
		}
		target := c.arg.(string)
		if !storage.IsLinkTarget(target) {
			continue
		}
		if ok, err := db.linksIndexed(ctx); err != nil || !ok {
			return nil, err
		}
		d := &linkDrive{path: c.path, sole: len(members) == 1}
		id, n, err := db.linkTargetID(ctx, target, rq.q.Collection+":"+c.path)
		if err != nil {
			return nil, err
		}
		if id != 0 {
			d.ids, d.records = append(d.ids, id), n
		}
		mark, marked, err := db.linkTargetID(ctx, skippedLinksTarget, rq.q.Collection+":")
		if err != nil {
			return nil, err
		}
		if marked > 0 {
			d.ids, d.marked = append(d.ids, mark), true
		}
		return d, nil
	}
	return nil, nil
}

// linkTargetID returns the id of a target and source in link_targets and
// the number of links to it (0, 0 when it has no row).
func (db *DB) linkTargetID(ctx context.Context, target, source string) (id, records int64, err error) {
	err = db.reads.queryRow(ctx, db.q.linkTarget, target, source).Scan(&id, &records)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read link target: %w", err)
	}
	return id, records, nil
}

// linkSource is the FROM clause reading the records that a link drive
// selects, their creation time and URI as the value indexes' entries
// name them (v.rec_created, v.rec_uri), and its arguments, which come
// before the statement's other conditions'.
func linkSource(d *linkDrive) (string, []any) {
	cond, args := `tid = 0`, []any(nil) // no target, no mark: nothing links
	switch len(d.ids) {
	case 1:
		cond, args = `tid = ?`, []any{d.ids[0]}
	case 2:
		cond, args = `tid IN (?, ?)`, []any{d.ids[0], d.ids[1]}
	}
	return `(SELECT uri AS rec_uri, created_at AS rec_created FROM record_links WHERE ` + cond + `) v
		JOIN records ON records.uri = v.rec_uri`, args
}
