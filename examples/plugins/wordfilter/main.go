//go:build wasip1

// Command wordfilter is an example script-library plugin: check finds the
// configured words in a text, censor masks them. Lua calls it as
//
//	plugins.call("word-filter", "check", {text = input.text})
package main

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/lexview/lexview/examples/plugins/pdk"
)

func main() {}

func init() {
	pdk.Register("check", check)
	pdk.Register("censor", censor)
}

// configured caches the words: an instance's config never changes (a
// new config comes with a reload, which starts new instances).
var configured []string

// words returns the configured words, lower-cased.
func words() []string {
	if configured != nil {
		return configured
	}
	var cfg struct {
		Words []string `json:"words"`
	}
	_ = pdk.Config(&cfg)
	configured = []string{}
	for _, w := range cfg.Words {
		configured = append(configured, strings.ToLower(w))
	}
	return configured
}

type textInput struct {
	Text string `json:"text"`
}

// checkResult is check's answer. Structs encode much faster than maps in
// a Go module (reflection is costly in WebAssembly).
type checkResult struct {
	Clean   bool     `json:"clean"`
	Matches []string `json:"matches"`
}

// check answers {clean, matches}: the configured words found in text.
func check(in json.RawMessage) (any, error) {
	var req textInput
	if err := json.Unmarshal(in, &req); err != nil {
		return nil, err
	}
	matches := []string{}
	bad := words()
	for _, tok := range strings.FieldsFunc(strings.ToLower(req.Text), notWord) {
		for _, w := range bad {
			if tok == w {
				matches = append(matches, tok)
			}
		}
	}
	return checkResult{Clean: len(matches) == 0, Matches: matches}, nil
}

// censor answers {text} with each configured word replaced by asterisks.
func censor(in json.RawMessage) (any, error) {
	var req textInput
	if err := json.Unmarshal(in, &req); err != nil {
		return nil, err
	}
	bad := words()
	var b strings.Builder
	word := []rune{}
	flush := func() {
		w := string(word)
		for _, x := range bad {
			if strings.ToLower(w) == x {
				w = strings.Repeat("*", len(word))
				pdk.Log(pdk.Info, "censored a word")
				break
			}
		}
		b.WriteString(w)
		word = word[:0]
	}
	for _, r := range req.Text {
		if notWord(r) {
			flush()
			b.WriteRune(r)
			continue
		}
		word = append(word, r)
	}
	flush()
	return textInput{Text: b.String()}, nil
}

func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
