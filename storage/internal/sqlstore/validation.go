package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

// InvalidRecordCounts implements storage.ValidationStore. The flagged
// records are the rows of the partial index records_invalid, so the count
// reads as many entries as there are flagged records, whatever the size of
// the table.
func (db *DB) InvalidRecordCounts(ctx context.Context, limit int) ([]storage.InvalidCount, error) {
	q := `SELECT collection, invalid, COUNT(*) AS n FROM records WHERE invalid IS NOT NULL
		GROUP BY collection, invalid ORDER BY n DESC, collection, invalid`
	var args []any
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, q), args...)
	if err != nil {
		return nil, fmt.Errorf("count invalid records: %w", err)
	}
	defer rows.Close()
	out := []storage.InvalidCount{}
	for rows.Next() {
		var c storage.InvalidCount
		if err := rows.Scan(&c.Collection, &c.Reason, &c.Count); err != nil {
			return nil, fmt.Errorf("count invalid records: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count invalid records: %w", err)
	}
	return out, nil
}

// SetRecordValidation implements storage.ValidationStore: one UPDATE per
// record, in one transaction, changing only a record still at the CID
// validated and whose error differs. The UPDATE names neither the record
// nor its times, so the triggers keeping the link, value and search
// indexes (which watch those columns) have nothing to redo.
func (db *DB) SetRecordValidation(ctx context.Context, outcomes []storage.Revalidation) (flagged, cleared int64, err error) {
	if len(outcomes) == 0 {
		return 0, 0, nil
	}
	stmt := Bind(db.dialect, `UPDATE records SET invalid = ?::text WHERE uri = ? AND cid = ? AND invalid IS DISTINCT FROM ?::text`)
	err = db.inTx(ctx, func(tx *sql.Tx) error {
		flagged, cleared = 0, 0
		st, err := tx.PrepareContext(ctx, stmt)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, o := range outcomes {
			var invalid any
			if o.Invalid != "" {
				invalid = o.Invalid
			}
			res, err := st.ExecContext(ctx, invalid, o.URI, o.CID, invalid)
			if err != nil {
				return fmt.Errorf("%s: %w", o.URI, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if o.Invalid != "" {
				flagged += n
			} else {
				cleared += n
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("store validation outcomes: %w", err)
	}
	return flagged, cleared, nil
}

// PutValidationPass implements storage.ValidationStore.
func (db *DB) PutValidationPass(ctx context.Context, p storage.ValidationPass) error {
	var afterCreated, afterURI any
	if p.After != nil {
		afterCreated, afterURI = db.dialect.Time(p.After.Time), p.After.URI
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = time.Now()
	}
	if p.StartedAt.IsZero() {
		p.StartedAt = p.UpdatedAt
	}
	_, err := db.exec(ctx, `INSERT INTO validation_passes
		(collection, revision, after_created, after_uri, checked, flagged, cleared, done, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (collection) DO UPDATE SET revision = excluded.revision, after_created = excluded.after_created,
			after_uri = excluded.after_uri, checked = excluded.checked, flagged = excluded.flagged,
			cleared = excluded.cleared, done = excluded.done, started_at = excluded.started_at,
			updated_at = excluded.updated_at`,
		p.Collection, p.Revision, afterCreated, afterURI, p.Checked, p.Flagged, p.Cleared, p.Done,
		db.dialect.Time(p.StartedAt), db.dialect.Time(p.UpdatedAt))
	if err != nil {
		return fmt.Errorf("store validation pass of %s: %w", p.Collection, err)
	}
	return nil
}

// ValidationPasses implements storage.ValidationStore.
func (db *DB) ValidationPasses(ctx context.Context) ([]storage.ValidationPass, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT collection, revision, after_created, after_uri, checked, flagged,
		cleared, done, started_at, updated_at FROM validation_passes ORDER BY collection`)
	if err != nil {
		return nil, fmt.Errorf("list validation passes: %w", err)
	}
	defer rows.Close()
	out := []storage.ValidationPass{}
	for rows.Next() {
		var p storage.ValidationPass
		var afterCreated, started, updated Time
		var afterURI sql.NullString
		if err := rows.Scan(&p.Collection, &p.Revision, &afterCreated, &afterURI, &p.Checked, &p.Flagged,
			&p.Cleared, &p.Done, &started, &updated); err != nil {
			return nil, fmt.Errorf("list validation passes: %w", err)
		}
		if afterURI.Valid {
			p.After = &storage.Position{Time: afterCreated.T, URI: afterURI.String}
		}
		p.StartedAt, p.UpdatedAt = started.T, updated.T
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list validation passes: %w", err)
	}
	return out, nil
}
