package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/lexview/lexview/storage/internal/sqlstore"
)

// The statements storing links (migration 0032): a link names its target
// and source by their row in link_targets, created on first sight; the
// writer adds the links it stored to their targets' counts (the trigger
// on record_links takes them off).
const (
	findLinkTarget = `SELECT id FROM link_targets WHERE target = ?1 AND source = ?2`
	addLinkTarget  = `INSERT INTO link_targets (target, source) VALUES (?1, ?2)`
	insertLink     = `INSERT INTO record_links (tid, created_at, uri, did) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING`
	countLinks     = `UPDATE link_targets SET records = records + ?2 WHERE id = ?1`
)

// linkTargetKey is a link's target and source.
type linkTargetKey struct{ target, source string }

func (dialect) InsertLinks(ctx context.Context, tx *sql.Tx, links []sqlstore.LinkRow) (err error) {
	var stmts [4]*sql.Stmt
	defer func() {
		for _, s := range stmts {
			if s != nil {
				err = errors.Join(err, s.Close())
			}
		}
	}()
	for i, q := range []string{findLinkTarget, addLinkTarget, insertLink, countLinks} {
		if stmts[i], err = tx.PrepareContext(ctx, q); err != nil {
			return err
		}
	}
	find, add, insert, count := stmts[0], stmts[1], stmts[2], stmts[3]
	ids := make(map[linkTargetKey]int64)
	added := make(map[int64]int64)
	for _, l := range links {
		key := linkTargetKey{l.Target, l.Source}
		id, ok := ids[key]
		if !ok {
			if id, err = linkTarget(ctx, find, add, key); err != nil {
				return fmt.Errorf("link target %s of %s: %w", l.Target, l.URI, err)
			}
			ids[key] = id
		}
		res, err := insert.ExecContext(ctx, id, l.CreatedAt.UnixMicro(), l.URI, l.DID)
		if err != nil {
			return fmt.Errorf("link of %s: %w", l.URI, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n > 0 {
			added[id] += n
		}
	}
	// In id order: the counts' pages are visited once each, in order.
	for _, id := range slices.Sorted(maps.Keys(added)) {
		if _, err := count.ExecContext(ctx, id, added[id]); err != nil {
			return fmt.Errorf("count links: %w", err)
		}
	}
	return nil
}

// linkTarget returns the id of a target and source, adding its row if it
// has none.
func linkTarget(ctx context.Context, find, add *sql.Stmt, key linkTargetKey) (int64, error) {
	var id int64
	err := find.QueryRowContext(ctx, key.target, key.source).Scan(&id)
	if !errors.Is(err, sql.ErrNoRows) {
		return id, err
	}
	res, err := add.ExecContext(ctx, key.target, key.source)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}
