package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lexview/lexview/storage"
)

// The query planner of QueryRecords and CountMatching. When the
// collection has a ready value index on a field that the filter
// constrains with =, <, <=, > or >= (the filter itself, or a member of its
// top-level AND), the query is driven from that index's entries
// (field_index_values, see fieldvalues.go) and the rest of the filter
// applies to the records; when the sort is on an indexed field, the page
// is read from the index in sort order with keyset cursors. The entries
// hold exactly what the filter's JSON expressions compute, so the answers
// are the same as a scan's.
//
// Each statement that reads entries also requires, in its own snapshot,
// that the index is still ready (indexGuard): entries are complete in any
// snapshot where the index is ready, since a drop commits before its
// entries are deleted. A statement whose index was dropped meanwhile
// returns nothing; an empty answer is then checked against the registry
// and the query planned again (see QueryRecords).

// fieldIndexCacheTTL is how long the ready value indexes of a collection
// are taken from memory: an index made ready by another instance is used
// after at most this long. A stale entry is harmless (see indexGuard).
const fieldIndexCacheTTL = 2 * time.Second

// fieldIndexCache keeps the ready value indexes of collections, by path.
type fieldIndexCache struct {
	mu    sync.Mutex
	ready map[string]cachedIndexes
}

type cachedIndexes struct {
	at     time.Time
	byPath map[string]int64
}

// forget empties the cache (an index was declared, dropped or made ready).
func (c *fieldIndexCache) forget() {
	c.mu.Lock()
	c.ready = nil
	c.mu.Unlock()
}

// readyValueIndexes returns the ready value indexes of collection by path.
func (db *DB) readyValueIndexes(ctx context.Context, collection string) (map[string]int64, error) {
	c := &db.fieldIndexes
	c.mu.Lock()
	e, ok := c.ready[collection]
	c.mu.Unlock()
	if ok && time.Since(e.at) < fieldIndexCacheTTL {
		return e.byPath, nil
	}
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, `SELECT id, path FROM field_indexes
		WHERE collection = ? AND kind = 'value' AND state = 'ready'`), collection)
	if err != nil {
		return nil, fmt.Errorf("field indexes: %w", err)
	}
	defer rows.Close()
	byPath := map[string]int64{}
	for rows.Next() {
		var id int64
		var path string
		if err := rows.Scan(&id, &path); err != nil {
			return nil, fmt.Errorf("field indexes: %w", err)
		}
		byPath[path] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("field indexes: %w", err)
	}
	c.mu.Lock()
	if c.ready == nil {
		c.ready = map[string]cachedIndexes{}
	}
	c.ready[collection] = cachedIndexes{at: time.Now(), byPath: byPath}
	c.mu.Unlock()
	return byPath, nil
}

// stillReady reports whether every index of ids is ready, reading the
// registry (not the cache).
func (db *DB) stillReady(ctx context.Context, ids []int64) (bool, error) {
	for _, id := range ids {
		var n int
		if err := db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT COUNT(*) FROM field_indexes WHERE id = ? AND state = 'ready'`), id).Scan(&n); err != nil {
			return false, fmt.Errorf("field indexes: %w", err)
		}
		if n == 0 {
			return false, nil
		}
	}
	return true, nil
}

// indexGuard is the condition that the index (its ID the argument) is
// still ready, in the statement's snapshot.
const indexGuard = `EXISTS (SELECT 1 FROM field_indexes WHERE id = ? AND state = 'ready')`

// indexCond is a filter condition a value index answers: on the entries'
// group, and on num or str.
type indexCond struct {
	path string
	grp  int
	col  string // "num" or "str"
	op   string // =, <, <=, >, >=
	arg  any
}

// asIndexCond returns the condition leaf f stands for on a value index, if
// one can answer it: =, <, <=, >, >= on a number or string, = on a
// boolean. f has been validated (translateFilter).
func asIndexCond(f *storage.Filter) (indexCond, bool) {
	if f.Field == "" || f.And != nil || f.Or != nil {
		return indexCond{}, false
	}
	op, ok := normalizeOp(f.Op)
	if !ok || op == "!=" || op == "LIKE" || op == "NOT LIKE" {
		return indexCond{}, false
	}
	v, err := filterValue(f.Value)
	if err != nil {
		return indexCond{}, false
	}
	c := indexCond{path: f.Field, op: op}
	switch x := v.(type) {
	case float64:
		c.grp, c.col, c.arg = 0, "num", x
	case string:
		c.grp, c.col, c.arg = 1, "str", x
	case bool:
		if op != "=" {
			return indexCond{}, false
		}
		c.grp, c.col, c.arg = 2, "num", int64(0)
		if x {
			c.arg = int64(1)
		}
	default:
		return indexCond{}, false
	}
	return c, true
}

// drive is the part of a filter answered from one value index.
type drive struct {
	id    int64
	path  string
	grp   int
	conds []indexCond
}

// terms renders the drive's conditions on the entries (alias v).
func (d *drive) terms(w *where) {
	w.add(`v.grp = ` + strconv.Itoa(d.grp))
	for _, c := range d.conds {
		cast := "?::numeric"
		if c.col == "str" {
			cast = "?::text"
		}
		w.add(`v.`+c.col+` `+c.op+` `+cast, c.arg)
	}
}

// plan is how a query is answered.
type plan struct {
	drive *drive
	// residual is what remains of the filter, applied to the records.
	residual *storage.Filter
	// sortIndex is the value index ordering a field sort, or 0.
	sortIndex int64
	// link reads the records from the link index (planlinks.go), when
	// no value index serves the filter.
	link *linkDrive
	// hint lists the fields whose value index would have served a query
	// planned as a scan.
	hint []string
}

// entries reports whether the plan reads entries (alias v: rec_uri,
// rec_created) of a value index or of the link index.
func (p plan) entries() bool { return p.index() != 0 || p.link != nil }

// index is the value index whose entries the plan reads (alias v), or 0.
func (p plan) index() int64 {
	if p.sortIndex != 0 {
		return p.sortIndex
	}
	if p.drive != nil {
		return p.drive.id
	}
	return 0
}

// planQuery chooses how to answer a query given the collection's ready
// value indexes by path. A field sort on an indexed field reads that
// index, and takes from the filter only the conditions on the same field;
// otherwise the first equality the filter's top level holds on an indexed
// field drives the query (else the first range), with every other
// condition on that field and group.
func planQuery(f *storage.Filter, sort string, indexes map[string]int64) plan {
	var p plan
	only := ""
	if sort != "" {
		if id, ok := indexes[sort]; ok {
			p.sortIndex, only = id, sort
		}
	}
	var members []storage.Filter
	switch {
	case f == nil:
	case f.And != nil:
		members = f.And
	default:
		members = []storage.Filter{*f}
	}
	conds := make([]indexCond, len(members))
	usable := make([]bool, len(members))
	best := -1
	for i := range members {
		c, ok := asIndexCond(&members[i])
		if !ok {
			continue
		}
		conds[i] = c
		if _, indexed := indexes[c.path]; !indexed || only != "" && c.path != only {
			if p.sortIndex == 0 {
				p.hint = appendNew(p.hint, c.path)
			}
			continue
		}
		usable[i] = true
		if best < 0 || c.op == "=" && conds[best].op != "=" {
			best = i
		}
	}
	if sort != "" && p.sortIndex == 0 {
		p.hint = appendNew(p.hint, sort)
	}
	if best < 0 {
		p.residual = f
		return p
	}
	p.hint = nil
	d := &drive{id: indexes[conds[best].path], path: conds[best].path, grp: conds[best].grp}
	var rest []storage.Filter
	for i := range members {
		if usable[i] && conds[i].path == d.path && conds[i].grp == d.grp {
			d.conds = append(d.conds, conds[i])
			continue
		}
		rest = append(rest, members[i])
	}
	p.drive = d
	switch len(rest) {
	case 0:
	case 1:
		p.residual = &rest[0]
	default:
		p.residual = &storage.Filter{And: rest}
	}
	return p
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// where is a list of SQL conditions and their arguments.
type where struct {
	terms []string
	args  []any
}

func (w *where) add(term string, args ...any) {
	w.terms = append(w.terms, term)
	w.args = append(w.args, args...)
}

func (w *where) addAll(o where) {
	w.terms = append(w.terms, o.terms...)
	w.args = append(w.args, o.args...)
}

func (w where) sql() string { return strings.Join(w.terms, ` AND `) }

// source returns the FROM clause and the conditions shared by every
// statement of a plan: the collection (or the index), the repository,
// the residual filter, the labels and the index guard. joined reports
// whether records is read (a statement on the entries alone needs it
// only for residual conditions and labels, or to return records).
func (db *DB) source(rq *recordQuery, p plan, needRecords bool) (from string, w where, err error) {
	id := p.index()
	switch {
	case p.link != nil:
		// The drive's arguments precede the conditions': its FROM comes
		// first. Its links come from the collection's records only (the
		// source names it).
		from, w.args = linkSource(p.link)
		if rq.didLo != "" {
			w.add(`v.rec_uri >= ?`, rq.didLo)
			w.add(`v.rec_uri < ?`, rq.didHi)
		}
	case id == 0:
		from = `records`
		w.add(`collection = ?`, rq.q.Collection)
		if rq.didLo != "" {
			w.add(`uri >= ?`, rq.didLo)
			w.add(`uri < ?`, rq.didHi)
		}
	default:
		from = `field_index_values v`
		if needRecords || p.residual != nil || len(rq.labels.terms) > 0 || rq.q.ExcludeInvalid {
			from += ` JOIN records ON records.uri = v.rec_uri`
		}
		w.add(`v.index_id = ?`, id)
		if p.drive != nil {
			p.drive.terms(&w)
		}
		if rq.didLo != "" {
			w.add(`v.rec_uri >= ?`, rq.didLo)
			w.add(`v.rec_uri < ?`, rq.didHi)
		}
	}
	if p.residual != nil {
		cond, args, err := translateFilter(db.dialect, p.residual)
		if err != nil {
			return "", where{}, err
		}
		w.add(cond, args...)
	}
	w.addAll(rq.labels)
	if rq.q.ExcludeInvalid {
		// A filter on the rows read, never a reason to read others: the
		// plan stays the one without it (the records are read anyway, but
		// for a count driven by an index's entries alone).
		w.add(`records.invalid IS NULL`)
	}
	if id != 0 {
		w.add(indexGuard, id)
	}
	return from, w, nil
}

// plan plans rq, and reports a scan that an index would have served.
func (db *DB) plan(ctx context.Context, rq *recordQuery) (plan, error) {
	if rq.q.Filter == nil && rq.q.Sort == "" {
		return plan{}, nil
	}
	indexes, err := db.readyValueIndexes(ctx, rq.q.Collection)
	if err != nil {
		return plan{}, err
	}
	p := planQuery(rq.q.Filter, rq.q.Sort, indexes)
	if p.drive == nil && p.sortIndex == 0 && rq.q.Filter != nil {
		if p.link, err = db.planLink(ctx, rq); err != nil {
			return plan{}, err
		}
		if p.link != nil {
			p.hint = slices.DeleteFunc(p.hint, func(f string) bool { return f == p.link.path })
		}
	}
	if len(p.hint) > 0 && rq.q.OnScan != nil {
		rq.q.OnScan(storage.ScanHint{Collection: rq.q.Collection, Fields: p.hint})
	}
	return p, nil
}

// replan reports whether an empty answer of plan p must be computed
// again: its index is no longer ready (and the cache is then emptied).
func (db *DB) replan(ctx context.Context, p plan) (bool, error) {
	id := p.index()
	if id == 0 {
		return false, nil
	}
	ok, err := db.stillReady(ctx, []int64{id})
	if err != nil || ok {
		return false, err
	}
	db.fieldIndexes.forget()
	return true, nil
}
