package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lexview/lexview/storage"
)

const networkLexiconColumns = `nsid, authority_did, target_collection, cid, last_fetched_at, upstream_deleted_at, created_at`

func scanNetworkLexicon(row rowScanner) (storage.NetworkLexicon, error) {
	var n storage.NetworkLexicon
	var target sql.NullString
	var fetched, deleted, created Time
	err := row.Scan(&n.NSID, &n.AuthorityDID, &target, &n.CID, &fetched, &deleted, &created)
	n.TargetCollection = target.String
	n.LastFetchedAt, n.UpstreamDeletedAt, n.CreatedAt = fetched.T, deleted.T, created.T
	return n, err
}

// PutNetworkLexicon implements storage.NetworkLexiconStore.
func (db *DB) PutNetworkLexicon(ctx context.Context, n storage.NetworkLexicon) error {
	_, err := db.exec(ctx, `INSERT INTO network_lexicons (`+networkLexiconColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (nsid) DO UPDATE SET authority_did = excluded.authority_did, target_collection = excluded.target_collection,
		cid = excluded.cid, last_fetched_at = excluded.last_fetched_at, upstream_deleted_at = excluded.upstream_deleted_at`,
		n.NSID, n.AuthorityDID, nullString(n.TargetCollection), n.CID, db.dialect.Time(n.LastFetchedAt),
		db.nullTime(n.UpstreamDeletedAt), db.dialect.Time(n.CreatedAt))
	if err != nil {
		return fmt.Errorf("put network lexicon: %w", err)
	}
	return nil
}

// GetNetworkLexicon implements storage.NetworkLexiconStore.
func (db *DB) GetNetworkLexicon(ctx context.Context, nsid string) (storage.NetworkLexicon, error) {
	n, err := scanNetworkLexicon(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+networkLexiconColumns+` FROM network_lexicons WHERE nsid = ?`), nsid))
	return n, notFound(err)
}

// ListNetworkLexicons implements storage.NetworkLexiconStore.
func (db *DB) ListNetworkLexicons(ctx context.Context) ([]storage.NetworkLexicon, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+networkLexiconColumns+` FROM network_lexicons ORDER BY nsid`, scanNetworkLexicon)
	if err != nil {
		return nil, fmt.Errorf("list network lexicons: %w", err)
	}
	return out, nil
}

// DeleteNetworkLexicon implements storage.NetworkLexiconStore.
func (db *DB) DeleteNetworkLexicon(ctx context.Context, nsid string) error {
	return db.execOne(ctx, "delete network lexicon", `DELETE FROM network_lexicons WHERE nsid = ?`, nsid)
}
