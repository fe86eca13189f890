package postgres

import "database/sql/driver"

// textArray is a text[] parameter: pq.StringArray's literal, every
// element quoted, built in one pass into one buffer. For a batch of
// records (half a megabyte of JSON full of quotes to escape)
// pq.StringArray copies each element, grows its buffer a dozen times and
// copies the result twice more. Elements may be strings or byte slices
// (record values), which are not copied into strings first.
type textArray[S ~string | ~[]byte] []S

// Value implements driver.Valuer. The literal goes to the server as it
// is: lib/pq sends a []byte parameter unchanged unless its type is bytea.
func (a textArray[S]) Value() (driver.Value, error) {
	size := 2 // the braces
	for _, s := range a {
		size += len(s) + len(s)/8 + 3 // quotes and comma, and room for escapes
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, s := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		start := 0
		for j := 0; j < len(s); j++ {
			if c := s[j]; c == '"' || c == '\\' {
				b = append(b, s[start:j]...)
				b = append(b, '\\')
				start = j
			}
		}
		b = append(b, s[start:]...)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}
