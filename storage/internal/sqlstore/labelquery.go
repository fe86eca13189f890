package sqlstore

import (
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// translateLabels renders label conditions as WHERE terms on the records
// table: [NOT] EXISTS over the labels that apply at `at` to the record's
// URI (or, for Account conditions, its author's DID).
func translateLabels(d Dialect, conds []storage.LabelCondition, at time.Time) (terms []string, args []any, err error) {
	if len(conds) > storage.MaxLabelConditions {
		return nil, nil, invalid("at most %d label conditions", storage.MaxLabelConditions)
	}
	if at.IsZero() {
		at = time.Now()
	}
	for _, c := range conds {
		if len(c.Values) > storage.MaxLabelValues || len(c.Sources) > storage.MaxLabelValues {
			return nil, nil, invalid("a label condition names at most %d values and %d labelers", storage.MaxLabelValues, storage.MaxLabelValues)
		}
		var b strings.Builder
		if c.Absent {
			b.WriteString(`NOT `)
		}
		b.WriteString(`EXISTS (SELECT 1 FROM labels l WHERE l.uri = records.`)
		if c.Account {
			b.WriteString(`did`)
		} else {
			b.WriteString(`uri`)
		}
		b.WriteString(` AND l.neg = ? AND (l.exp IS NULL OR l.exp > ?)`)
		args = append(args, false, d.Time(at))
		for _, set := range []struct {
			col  string
			vals []string
		}{{"val", c.Values}, {"src", c.Sources}} {
			if len(set.vals) == 0 {
				continue
			}
			for _, v := range set.vals {
				if v == "" {
					return nil, nil, invalid("label condition: empty %s", set.col)
				}
				args = append(args, v)
			}
			b.WriteString(` AND l.` + set.col + ` IN (?` + strings.Repeat(`, ?`, len(set.vals)-1) + `)`)
		}
		b.WriteString(`)`)
		terms = append(terms, b.String())
	}
	return terms, args, nil
}
