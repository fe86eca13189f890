// Package textclip bounds text shown to operators (error messages, reasons)
// without cutting a UTF-8 character in two.
package textclip

import "unicode/utf8"

// Clip returns s when it is at most n bytes, else its first n bytes or
// fewer, cut at a character boundary, followed by "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
