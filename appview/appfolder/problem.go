package appfolder

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
)

// FileError is a problem of one file of a folder: what Load, Check and
// Prepare report, joined, for each file that has one.
type FileError struct {
	// File is the file's path in the folder, slash-separated
	// ("scripts/com.example.listNotes.lua").
	File string
	// Line is the line of the problem in the file, from 1; 0 when it
	// cannot be told.
	Line int
	Err  error
}

// Error is "FILE: what is wrong".
func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }

func (e *FileError) Unwrap() error { return e.Err }

// fileError is err in the file name, at line (0 for unknown).
func fileError(name string, line int, err error) error {
	return &FileError{File: name, Line: line, Err: err}
}

// Problems lists the problems an error of Load, Check, Prepare or Apply
// holds, one per joined error: a *FileError as it is, anything else as a
// FileError without a file.
func Problems(err error) []FileError {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []FileError
		for _, e := range joined.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	if fe, ok := err.(*FileError); ok {
		return []FileError{*fe}
	}
	return []FileError{{Err: err}}
}

// jsonLine is the line of the JSON syntax or type error of raw, 0 when
// raw decodes or the error has no offset.
func jsonLine(raw []byte) int {
	var v any
	err := json.Unmarshal(raw, &v)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return lineAt(raw, se.Offset)
	}
	return 0
}

// lineAt is the line, from 1, of the byte offset in raw.
func lineAt(raw []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(raw)))
	return bytes.Count(raw[:offset], []byte("\n")) + 1
}

// luaLineRE finds the line in the Lua compiler's message ("check
// line:3(column:3) near 'end': syntax error").
var luaLineRE = regexp.MustCompile(`\bline:(\d+)`)

// luaLine is the line a Lua compile error names, 0 when it names none.
func luaLine(err error) int {
	m := luaLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
