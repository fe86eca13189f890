package sqlstore

import (
	"encoding/binary"
	"math"
	"strings"
)

// SQLite's search: the FTS4 table search_fts (migration 0031) holds one
// row per record of a collection with text indexes, one column per text
// index (f0 to f3, the index's slot). FTS4's query syntax cannot restrict
// a phrase to some columns, and a collection's search must leave out the
// columns of its indexes not ready (building, or dropped and being
// cleared), so the MATCH expression fts4Match renders finds a superset:
// every alternative's words and phrases, in any column. SearchRank, a Go
// function registered on the read connections as lexview_search_rank,
// then decides each row exactly from matchinfo(search_fts, 'pcnalx') (how
// often each phrase occurs in each column of the row, and the table's
// statistics) and a program naming the columns searched and each
// alternative's phrases, and ranks the rows it keeps with BM25.

// SearchRankFunction is the name of SearchRank as an SQLite function.
const SearchRankFunction = "lexview_search_rank"

// fts4Match renders e as an FTS4 MATCH expression (the enhanced query
// syntax, which mattn/go-sqlite3 compiles in) and the program SearchRank
// runs over it, for the columns in mask (bit i: column f<i>).
//
// The expression is the alternatives' positive items, `("a" AND "b c") OR
// (...)`, then, for each alternative that excludes items, a probe `("a"
// AND "b c" AND "x")`: it matches only rows the alternative matches
// already, so the rows found are the same, and it makes matchinfo report
// the excluded items' hits, which SearchRank checks in the columns
// searched only. Every item is a quoted phrase, whose words FTS4's own
// tokenizer splits again: no word can be read as an operator.
//
// The program is bytes: the column mask, the number of leading phrases
// that score (the positive items of the first part), the number of
// alternatives, then each alternative's positive phrase indexes and its
// excluded ones, each list preceded by its length. Phrases are numbered
// in the order they appear in the expression, as matchinfo numbers them.
func fts4Match(e searchExpr, mask byte) (match string, prog []byte) {
	var b strings.Builder
	phrase := 0
	prog = []byte{mask, 0, byte(len(e.groups))}
	pos := make([][]byte, len(e.groups))
	for gi, g := range e.groups {
		if gi > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('(')
		for i, it := range g.pos {
			if i > 0 {
				b.WriteString(" AND ")
			}
			writeFTS4Phrase(&b, it)
			pos[gi] = append(pos[gi], byte(phrase))
			phrase++
		}
		b.WriteByte(')')
	}
	prog[1] = byte(phrase)
	for gi, g := range e.groups {
		prog = append(prog, byte(len(pos[gi])))
		prog = append(prog, pos[gi]...)
		if len(g.neg) == 0 {
			prog = append(prog, 0)
			continue
		}
		b.WriteString(" OR (")
		for i, it := range g.pos {
			if i > 0 {
				b.WriteString(" AND ")
			}
			writeFTS4Phrase(&b, it)
			phrase++
		}
		prog = append(prog, byte(len(g.neg)))
		for _, it := range g.neg {
			b.WriteString(" AND ")
			writeFTS4Phrase(&b, it)
			prog = append(prog, byte(phrase))
			phrase++
		}
		b.WriteByte(')')
	}
	return b.String(), prog
}

// writeFTS4Phrase writes an item as a quoted FTS4 phrase. Its words hold
// letters, digits and marks only (searchWords), never a double quote.
func writeFTS4Phrase(b *strings.Builder, it searchItem) {
	b.WriteByte('"')
	b.WriteString(strings.Join(it.words, " "))
	if it.prefix {
		b.WriteByte('*')
	}
	b.WriteByte('"')
}

// BM25 parameters, as FTS5's bm25() uses them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// minIDF keeps a phrase found in most rows from scoring nothing or
	// less than nothing (FTS5 does the same).
	minIDF = 1e-6
)

// SearchRank is the SQLite function lexview_search_rank(matchinfo(
// search_fts, 'pcnalx'), program): nil when the row does not match the
// search in the program's columns (see fts4Match), else the row's BM25
// score over the program's scoring phrases, higher for a better match.
//
// BM25 needs, per phrase, its frequency in the row and the number of rows
// holding it. Columns not searched weigh nothing; the row count of a
// phrase is the largest of its per-column counts over the columns
// searched (FTS4 counts per column: a lower bound of the rows holding
// it). The statistics are those of the whole table, every collection's
// records together. A malformed argument yields nil: the function never
// fails a statement.
func SearchRank(matchinfo, prog []byte) any {
	mi := readMatchInfo(matchinfo)
	if mi.p == 0 || len(prog) < 3 {
		return nil
	}
	mask, scoring, groups := prog[0], int(prog[1]), int(prog[2])
	// The columns searched and their lengths.
	var rowLen, avgLen float64
	for c := 0; c < mi.c && c < 8; c++ {
		if mask&(1<<c) != 0 {
			rowLen += float64(mi.l(c))
			avgLen += float64(mi.a(c))
		}
	}
	hits := func(phrase int) (inRow, rows uint32) {
		for c := 0; c < mi.c && c < 8; c++ {
			if mask&(1<<c) != 0 {
				h, _, r := mi.x(phrase, c)
				inRow += h
				rows = max(rows, r)
			}
		}
		return inRow, rows
	}
	present := func(phrase byte) bool {
		if int(phrase) >= mi.p {
			return false
		}
		n, _ := hits(int(phrase))
		return n > 0
	}
	// Does an alternative match?
	matched := false
	rest := prog[3:]
	for g := 0; g < groups && !matched; g++ {
		var posList, negList []byte
		var ok bool
		if posList, rest, ok = lengthPrefixed(rest); !ok {
			return nil
		}
		if negList, rest, ok = lengthPrefixed(rest); !ok {
			return nil
		}
		matched = true
		for _, p := range posList {
			matched = matched && present(p)
		}
		for _, p := range negList {
			matched = matched && !present(p)
		}
	}
	if !matched {
		return nil
	}
	if avgLen < 1 {
		avgLen = 1
	}
	n := float64(mi.n())
	score := 0.0
	for p := 0; p < scoring && p < mi.p; p++ {
		inRow, rows := hits(p)
		if inRow == 0 {
			continue
		}
		tf, df := float64(inRow), min(float64(rows), n)
		idf := max(math.Log((n-df+0.5)/(df+0.5)), minIDF)
		score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*rowLen/avgLen))
	}
	return score
}

// lengthPrefixed splits off a list preceded by its length.
func lengthPrefixed(b []byte) (list, rest []byte, ok bool) {
	if len(b) == 0 || len(b) < 1+int(b[0]) {
		return nil, nil, false
	}
	return b[1 : 1+int(b[0])], b[1+int(b[0]):], true
}

// fts4MatchInfo is the blob of matchinfo(t, 'pcnalx'): 32-bit unsigned
// integers in the machine's byte order, p (phrases), c (columns), n
// (rows), a (average tokens per column), l (tokens per column in the row)
// and x (per phrase and column: hits in the row, hits in all rows, rows
// with hits). p and c are zero when the blob is malformed.
type fts4MatchInfo struct {
	b    []byte
	p, c int
}

func readMatchInfo(b []byte) fts4MatchInfo {
	m := fts4MatchInfo{b: b}
	p, c := int(m.u32(0)), int(m.u32(1))
	if p <= 0 || c <= 0 || p > 1<<12 || c > 64 || len(b) != 4*(3+2*c+3*p*c) {
		return fts4MatchInfo{}
	}
	m.p, m.c = p, c
	return m
}

func (m fts4MatchInfo) u32(i int) uint32 {
	if 4*i+4 > len(m.b) {
		return 0
	}
	return binary.NativeEndian.Uint32(m.b[4*i:])
}

func (m fts4MatchInfo) n() uint32        { return m.u32(2) }
func (m fts4MatchInfo) a(col int) uint32 { return m.u32(3 + col) }
func (m fts4MatchInfo) l(col int) uint32 { return m.u32(3 + m.c + col) }
func (m fts4MatchInfo) x(phrase, col int) (inRow, inAll, rows uint32) {
	i := 3 + 2*m.c + 3*(phrase*m.c+col)
	return m.u32(i), m.u32(i + 1), m.u32(i + 2)
}
