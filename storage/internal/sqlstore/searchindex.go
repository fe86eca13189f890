package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/lexview/lexview/storage"
)

// The text kind of field index (migration 0031): a text index's slot is
// given when it is declared; its build and, once dropped, the clearing of
// its slot both rewrite the search documents of its collection's records,
// chunk by chunk, from what the records hold now. The triggers on records
// keep the documents of every record written meanwhile.
var textIndexKind = fieldIndexKind{build: buildTextChunk, purge: purgeTextChunk, declare: declareTextIndex}

// searchSlotLock is the first key of the PostgreSQL advisory lock that
// serialises the choice of text index slots of a collection ("lexs").
const searchSlotLock = 0x6c657873

// declareTextIndex gives a new text index the lowest slot of its
// collection that no other text index holds (a dropped one holds its slot
// until its words are cleared) and, on PostgreSQL, the text-search
// configuration named by the setting storage.SearchConfigSetting.
func declareTextIndex(ctx context.Context, db *DB, tx *sql.Tx, idx storage.FieldIndex) error {
	path, err := ParseFieldPath(idx.Path)
	if err != nil {
		return fmt.Errorf("%w: %w", storage.ErrInvalidFieldIndex, err)
	}
	if db.dialect.Name() == "postgres" {
		// Two instances declaring text indexes of one collection at once
		// would choose the same slot: the second waits for the first.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, searchSlotLock, idx.Collection); err != nil {
			return fmt.Errorf("lock the collection's text index slots: %w", err)
		}
	}
	rows, err := tx.QueryContext(ctx, Bind(db.dialect, `SELECT slot FROM search_fields WHERE collection = ?`), idx.Collection)
	if err != nil {
		return fmt.Errorf("read text index slots: %w", err)
	}
	var taken [storage.MaxTextIndexes]bool
	for rows.Next() {
		var slot int
		if err := rows.Scan(&slot); err != nil {
			rows.Close()
			return fmt.Errorf("read text index slots: %w", err)
		}
		if slot >= 0 && slot < len(taken) {
			taken[slot] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read text index slots: %w", err)
	}
	slot := -1
	for i, t := range taken {
		if !t {
			slot = i
			break
		}
	}
	if slot < 0 {
		return invalidIndex("collection %s has %d text indexes already, the most it may have (a dropped one counts until the build has cleared it)",
			idx.Collection, storage.MaxTextIndexes)
	}
	config, err := db.searchConfig(ctx, tx)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO search_fields (index_id, collection, slot, json_path, config)
		VALUES (?, ?, ?, ?, ?)`), idx.ID, idx.Collection, slot, db.dialect.PathText(path), config)
	if err != nil {
		return fmt.Errorf("give the text index a slot: %w", err)
	}
	return nil
}

// searchConfig returns the text-search configuration a text index
// declared now gets: on PostgreSQL the setting storage.SearchConfigSetting
// or storage.DefaultSearchConfig, refused unless the database has a
// configuration of that name; "" on SQLite, whose tokenizer is fixed.
func (db *DB) searchConfig(ctx context.Context, tx *sql.Tx) (string, error) {
	if db.dialect.Name() != "postgres" {
		return "", nil
	}
	name := storage.DefaultSearchConfig
	err := tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = $1`, storage.SearchConfigSetting).Scan(&name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read setting %s: %w", storage.SearchConfigSetting, err)
	}
	var config string
	err = tx.QueryRowContext(ctx, `SELECT c.oid::regconfig::text FROM pg_ts_config c
		WHERE c.cfgname = $1 AND pg_ts_config_is_visible(c.oid)`, name).Scan(&config)
	if errors.Is(err, sql.ErrNoRows) {
		return "", invalidIndex("the setting %s names %q, which is no text-search configuration of this database (see \\dF in psql)",
			storage.SearchConfigSetting, truncate(name, 64))
	}
	if err != nil {
		return "", fmt.Errorf("find text-search configuration: %w", err)
	}
	return config, nil
}

// buildTextChunk writes the search documents of the next n records of a
// text index's collection, newest first: the documents the triggers would
// have written, now holding the new index's field too.
func buildTextChunk(ctx context.Context, db *DB, tx *sql.Tx, idx buildingIndex, n int) (int, *storage.Position, error) {
	return db.refreshSearchDocs(ctx, tx, idx.Collection, idx.after, n)
}

// purgeTextChunk clears a dropped text index's field from the next n
// records' search documents (rewriting them without it, or removing them
// when the collection has no other text index), keeping its position in
// the index's search_fields row. Once it reports fewer than n, the
// field_indexes row goes, and its search_fields row with it.
func purgeTextChunk(ctx context.Context, db *DB, tx *sql.Tx, id int64, n int) (int, error) {
	var collection, posURI string
	var posSet any
	err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT collection, purge_created, purge_uri FROM search_fields WHERE index_id = ?`), id).
		Scan(&collection, &posSet, &posURI)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read text index %d: %w", id, err)
	}
	var after *storage.Position
	if posSet != nil {
		var t Time
		if err := t.Scan(posSet); err != nil {
			return 0, err
		}
		after = &storage.Position{Time: t.T, URI: posURI}
	}
	count, next, err := db.refreshSearchDocs(ctx, tx, collection, after, n)
	if err != nil {
		return 0, err
	}
	if next == nil {
		return min(count, n-1), nil
	}
	_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE search_fields SET purge_created = ?, purge_uri = ? WHERE index_id = ?`),
		db.dialect.Time(next.Time), next.URI, id)
	return count, err
}

// refreshSearchDocs rewrites the search documents of up to n records of
// collection after a position, newest first, from the records and the
// collection's text indexes as they are now (none left: the documents go),
// and returns how many records it went through and the position reached
// (nil at the end of the collection).
//
// Why the result is right while records are written: see
// buildValueChunk, whose reasoning holds here too, with one difference. A
// document holds every field of the record, so the build overwrites a
// document a writer wrote instead of keeping it: on PostgreSQL it reads
// the chunk's records FOR SHARE, so that a writer changing one waits for
// the build and then writes its own document, and a record changed before
// the lock is read at its latest version.
func (db *DB) refreshSearchDocs(ctx context.Context, tx *sql.Tx, collection string, after *storage.Position, n int) (int, *storage.Position, error) {
	// chunk is the condition on the chunk's records, their columns named
	// with prefix q: up to the position, and, once the chunk's last
	// record is known, down to it.
	chunk := func(q string, last bool) string {
		c := q + `collection = ?`
		if after != nil {
			c += ` AND ` + q + `created_at <= ? AND (` + q + `created_at < ? OR ` + q + `uri < ?)`
		}
		if last {
			c += ` AND ` + q + `created_at >= ? AND (` + q + `created_at > ? OR ` + q + `uri >= ?)`
		}
		return c
	}
	args := []any{collection}
	if after != nil {
		t := db.dialect.Time(after.Time)
		args = append(args, t, t, after.URI)
	}
	count, last, err := chunkEnd(ctx, tx, Bind(db.dialect, `SELECT created_at, uri FROM records WHERE `+chunk("", false)+
		` ORDER BY `+newestFirst+` LIMIT ?`), append(args, n)...)
	if err != nil {
		return 0, nil, err
	}
	if count == 0 {
		return 0, nil, nil
	}
	t := db.dialect.Time(last.Time)
	args = append(args, t, t, last.URI)
	var stmts []string
	if db.dialect.Name() == "postgres" {
		stmts = []string{
			`INSERT INTO search_docs (uri, collection, did, doc)
			SELECT uri, collection, did, search_doc(collection, record) FROM records
			 WHERE ` + chunk("", true) + ` AND collection IN (SELECT collection FROM search_live) FOR SHARE OF records
			ON CONFLICT (uri) DO UPDATE SET collection = excluded.collection, did = excluded.did, doc = excluded.doc
			 WHERE search_docs.doc IS DISTINCT FROM excluded.doc`,
			`DELETE FROM search_docs WHERE uri IN (SELECT uri FROM records WHERE ` + chunk("", true) + `
			 AND collection NOT IN (SELECT collection FROM search_live) FOR SHARE OF records)`,
		}
	} else {
		stmts = []string{
			`DELETE FROM search_fts WHERE docid IN (SELECT d.docid FROM search_docs d JOIN records r ON r.uri = d.uri WHERE ` + chunk("r.", true) + `)`,
			`DELETE FROM search_docs WHERE uri IN (SELECT uri FROM records WHERE ` + chunk("", true) + `)`,
			`INSERT INTO search_docs (uri, collection, did) SELECT uri, collection, did FROM search_text WHERE ` + chunk("", true),
			`INSERT INTO search_fts (docid, f0, f1, f2, f3) SELECT d.docid, t.f0, t.f1, t.f2, t.f3
			 FROM search_text t JOIN search_docs d ON d.uri = t.uri WHERE ` + chunk("t.", true),
		}
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, Bind(db.dialect, s), args...); err != nil {
			return 0, nil, fmt.Errorf("write search documents: %w", err)
		}
	}
	if count < n {
		return count, nil, nil
	}
	return count, &last, nil
}

// searchField is a text index of a collection as a search sees it.
type searchField struct {
	path  string
	state storage.FieldIndexState
	searchSlot
}

// searchFields returns the text indexes of a collection that are not
// being dropped.
func (db *DB) searchFields(ctx context.Context, collection string) ([]searchField, error) {
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, `SELECT fi.path, fi.state, s.slot, s.config
		FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id
		WHERE s.collection = ? AND fi.state <> 'dropping' ORDER BY s.slot`), collection)
	if err != nil {
		return nil, fmt.Errorf("read text indexes: %w", err)
	}
	defer rows.Close()
	var out []searchField
	for rows.Next() {
		var f searchField
		var state string
		if err := rows.Scan(&f.path, &state, &f.slot, &f.config); err != nil {
			return nil, fmt.Errorf("read text indexes: %w", err)
		}
		f.state = storage.FieldIndexState(state)
		out = append(out, f)
	}
	return out, rows.Err()
}

// searchedSlots chooses the slots a search looks in: those of the fields
// asked for, or of every ready text index of the collection.
func searchedSlots(collection string, fields []searchField, asked []string) ([]searchSlot, error) {
	var slots []searchSlot
	if len(asked) == 0 {
		var building []string
		for _, f := range fields {
			if f.state == storage.FieldIndexReady {
				slots = append(slots, f.searchSlot)
			} else {
				building = append(building, f.path)
			}
		}
		if len(slots) == 0 {
			if len(building) > 0 {
				return nil, invalidSearch("the text indexes of %s (%s) are not ready yet", collection, strings.Join(building, ", "))
			}
			return nil, invalidSearch("collection %s has no text index to search: declare one", truncate(collection, 317))
		}
		return slots, nil
	}
	seen := map[int]bool{}
	for _, p := range asked {
		var found *searchField
		for i := range fields {
			if fields[i].path == p {
				found = &fields[i]
			}
		}
		switch {
		case found == nil:
			return nil, invalidSearch("field %q of %s has no text index", truncate(p, 64), truncate(collection, 317))
		case found.state != storage.FieldIndexReady:
			return nil, invalidSearch("the text index of %s on %q is %s, not ready", collection, p, found.state)
		case !seen[found.slot]:
			seen[found.slot] = true
			slots = append(slots, found.searchSlot)
		}
	}
	return slots, nil
}
