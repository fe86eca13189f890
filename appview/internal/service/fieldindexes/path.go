package fieldindexes

import "fmt"

// The limits of a field path, as the store checks them (storage.Filter's
// Field syntax): TestPathCheckMatchesStore compares the two.
const (
	maxPathLen     = 256
	maxPathSteps   = 32
	maxIndexDigits = 6
)

// checkPath reports why path is not a field path in the syntax of
// storage.Filter.Field ("subject.uri", "embed.images[0].alt"): names of
// ASCII letters, digits, '_', '$' and '-' separated by dots, each
// optionally followed by [n] array indices. It returns "" for a valid
// path. The store checks it again when the index is declared; checking
// here first lets a lexicon upload refuse a bad index before it stores
// anything, with a message naming the field.
func checkPath(path string) string {
	if len(path) > maxPathLen {
		return fmt.Sprintf("longer than %d bytes", maxPathLen)
	}
	steps, i, needName := 0, 0, true
	for i < len(path) {
		if steps >= maxPathSteps {
			return fmt.Sprintf("more than %d steps", maxPathSteps)
		}
		if needName {
			j := i
			for j < len(path) && isNameByte(path[j]) {
				j++
			}
			if j == i {
				return fmt.Sprintf("expected a name at offset %d (names hold letters, digits, '_', '$' and '-')", i)
			}
			steps++
			i, needName = j, false
			continue
		}
		switch path[i] {
		case '.':
			i, needName = i+1, true
		case '[':
			j := i + 1
			for j < len(path) && path[j] >= '0' && path[j] <= '9' {
				j++
			}
			digits := path[i+1 : j]
			if j >= len(path) || path[j] != ']' || digits == "" {
				return fmt.Sprintf("expected [n] at offset %d", i)
			}
			if len(digits) > maxIndexDigits || len(digits) > 1 && digits[0] == '0' {
				return fmt.Sprintf("array index %s out of range", digits)
			}
			steps++
			i = j + 1
		default:
			return fmt.Sprintf("unexpected %q at offset %d", path[i], i)
		}
	}
	if needName {
		return "ends with a dot"
	}
	return ""
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '-'
}
