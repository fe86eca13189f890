package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

const labelerColumns = `did, status, cursor, created_at, updated_at`

const labelColumns = `src, uri, val, cid, neg, cts, exp, sig, ver`

// labelRowShapes is the number of label upsert statements: a batch is
// split into statements of 64, 32, ..., 1 rows (PostgreSQL) or of one
// (SQLite), so no more than these seven are ever prepared.
const labelRowShapes = 7

// maxLabelSubjects is the most subjects one LabelsFor query asks for.
const maxLabelSubjects = 500

func scanLabeler(row rowScanner) (storage.Labeler, error) {
	var l storage.Labeler
	var cursor sql.NullInt64
	var created, updated Time
	err := row.Scan(&l.DID, &l.Status, &cursor, &created, &updated)
	if cursor.Valid {
		l.Cursor = &cursor.Int64
	}
	l.CreatedAt, l.UpdatedAt = created.T, updated.T
	return l, err
}

func scanLabel(row rowScanner) (storage.Label, error) {
	var l storage.Label
	var cts, exp Time
	var sig []byte
	err := row.Scan(&l.Src, &l.URI, &l.Val, &l.CID, &l.Neg, &cts, &exp, &sig, &l.Ver)
	l.Cts, l.Exp = cts.T, exp.T
	if len(sig) > 0 {
		l.Sig = sig
	}
	return l, err
}

// PutLabeler implements storage.LabelStore.
func (db *DB) PutLabeler(ctx context.Context, did string, at time.Time) (bool, error) {
	var created bool
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO labelers (`+labelerColumns+`)
			VALUES (?, ?, NULL, ?, ?) ON CONFLICT (did) DO NOTHING`),
			did, storage.LabelerActive, db.dialect.Time(at), db.dialect.Time(at))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			created = true
			return nil
		}
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE labelers SET status = ?, updated_at = ? WHERE did = ?`),
			storage.LabelerActive, db.dialect.Time(at), did)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put labeler: %w", err)
	}
	return created, nil
}

// GetLabeler implements storage.LabelStore.
func (db *DB) GetLabeler(ctx context.Context, did string) (storage.Labeler, error) {
	l, err := scanLabeler(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+labelerColumns+` FROM labelers WHERE did = ?`), did))
	return l, notFound(err)
}

// ListLabelers implements storage.LabelStore.
func (db *DB) ListLabelers(ctx context.Context) ([]storage.Labeler, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+labelerColumns+` FROM labelers ORDER BY created_at, did`, scanLabeler)
	if err != nil {
		return nil, fmt.Errorf("list labelers: %w", err)
	}
	return out, nil
}

// SetLabelerStatus implements storage.LabelStore.
func (db *DB) SetLabelerStatus(ctx context.Context, did, status string, at time.Time) error {
	if status != storage.LabelerActive && status != storage.LabelerPaused {
		return fmt.Errorf("set labeler status: unknown status %q", status)
	}
	return db.execOne(ctx, "set labeler status", `UPDATE labelers SET status = ?, updated_at = ? WHERE did = ?`,
		status, db.dialect.Time(at), did)
}

// DeleteLabeler implements storage.LabelStore. The labels go with it in
// the same statement (ON DELETE CASCADE).
func (db *DB) DeleteLabeler(ctx context.Context, did string) error {
	return db.execOne(ctx, "delete labeler", `DELETE FROM labelers WHERE did = ?`, did)
}

// ApplyLabels implements storage.LabelStore. The cursor is set first: a
// labeler that is absent stops the transaction before any label is
// written. Labels repeating a (Src, URI, Val) within the batch are reduced
// to the one that would win; the rest go in multi-row upserts.
func (db *DB) ApplyLabels(ctx context.Context, b storage.LabelBatch) error {
	for _, l := range b.Labels {
		if l.Src != b.Src {
			return fmt.Errorf("apply labels: label from %s in a batch of %s", l.Src, b.Src)
		}
	}
	labels := latestLabels(b.Labels)
	// The statements are prepared before the transaction takes the
	// writer's connection (SQLite's writer pool has only the one).
	setCursor, err := db.writeStmt(ctx, db.q.setLabelCursor)
	if err != nil {
		return fmt.Errorf("apply labels of %s: %w", b.Src, err)
	}
	var chunks [][]storage.Label
	var stmts []*sql.Stmt
	// Multi-row statements save PostgreSQL round trips; SQLite, in
	// process, stores labels one by one as fast (BenchApplyLabels).
	top := labelRowShapes - 1
	if db.dialect.Name() == "sqlite" {
		top = 0
	}
	for rest := labels; len(rest) > 0; {
		k := top
		for 1<<k > len(rest) {
			k--
		}
		stmt, err := db.writeStmt(ctx, db.q.upsertLabels[k])
		if err != nil {
			return fmt.Errorf("apply labels of %s: %w", b.Src, err)
		}
		chunks, stmts = append(chunks, rest[:1<<k]), append(stmts, stmt)
		rest = rest[1<<k:]
	}
	err = db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, setCursor).ExecContext(ctx, b.Cursor, b.Src)
		if err != nil {
			return fmt.Errorf("store cursor: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return storage.ErrNotFound
		}
		for i, chunk := range chunks {
			if _, err := tx.StmtContext(ctx, stmts[i]).ExecContext(ctx, labelArgs(db.dialect, chunk)...); err != nil {
				return fmt.Errorf("upsert labels: %w", err)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("apply labels of %s: %w", b.Src, err)
	}
	return err
}

// latestLabels keeps, for each (Src, URI, Val), the label the store would
// end with had they been written one by one: the one with the latest Cts,
// the later in the batch on a tie. One upsert statement cannot touch a row
// twice.
func latestLabels(in []storage.Label) []storage.Label {
	if len(in) < 2 {
		return in
	}
	type key struct{ src, uri, val string }
	at := make(map[key]int, len(in))
	out := make([]storage.Label, 0, len(in))
	for _, l := range in {
		k := key{l.Src, l.URI, l.Val}
		i, seen := at[k]
		switch {
		case !seen:
			at[k] = len(out)
			out = append(out, l)
		case !l.Cts.Before(out[i].Cts):
			out[i] = l
		}
	}
	return out
}

// labelArgs are the parameters of an upsert of labels.
func labelArgs(d Dialect, labels []storage.Label) []any {
	args := make([]any, 0, len(labels)*9)
	for _, l := range labels {
		var exp, sig any
		if !l.Exp.IsZero() {
			exp = d.Time(l.Exp)
		}
		if l.Sig != nil {
			sig = l.Sig
		}
		args = append(args, l.Src, l.URI, l.Val, l.CID, l.Neg, d.Time(l.Cts), exp, sig, l.Ver)
	}
	return args
}

// writeStmt is the statement of query prepared on the writer pool.
func (db *DB) writeStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	stmt, err := db.writes.stmt(ctx, query)
	if err == nil && stmt == nil {
		err = errors.New("statement cache closed or full")
	}
	return stmt, err
}

// upsertLabelsQuery is the upsert of n labels (distinct keys): each
// replaces the stored label unless that one is newer. The casts type the
// parameters of a multi-row VALUES for PostgreSQL.
func upsertLabelsQuery(n int) string {
	row := `(?, ?, ?, ?, ?::boolean, ?::timestamptz, ?::timestamptz, ?::bytea, ?::bigint)`
	return `INSERT INTO labels (` + labelColumns + `) VALUES ` +
		strings.Repeat(row+`, `, n-1) + row + `
		ON CONFLICT (src, uri, val) DO UPDATE SET cid = excluded.cid, neg = excluded.neg,
			cts = excluded.cts, exp = excluded.exp, sig = excluded.sig, ver = excluded.ver
		WHERE excluded.cts >= labels.cts`
}

// LabelsFor implements storage.LabelStore.
func (db *DB) LabelsFor(ctx context.Context, subjects []string, now time.Time) (map[string][]storage.Label, error) {
	out := map[string][]storage.Label{}
	subjects = slices.Compact(slices.Sorted(slices.Values(subjects)))
	for len(subjects) > 0 {
		chunk := subjects[:min(len(subjects), maxLabelSubjects)]
		subjects = subjects[len(chunk):]
		args := make([]any, 0, len(chunk)+1)
		for _, s := range chunk {
			args = append(args, s)
		}
		args = append(args, db.dialect.Time(now))
		q := `SELECT ` + labelColumns + ` FROM labels WHERE uri IN (` + strings.Repeat("?, ", len(chunk)-1) +
			`?) AND NOT neg AND (exp IS NULL OR exp > ?::timestamptz) ORDER BY uri, src, val`
		labels, err := queryAll(ctx, db.reader, Bind(db.dialect, q), scanLabel, args...)
		if err != nil {
			return nil, fmt.Errorf("labels for subjects: %w", err)
		}
		for _, l := range labels {
			out[l.URI] = append(out[l.URI], l)
		}
	}
	return out, nil
}
