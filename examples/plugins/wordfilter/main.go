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

// words returns the configured words, lower-cased.
func words() []string {
	var cfg struct {
		Words []string `json:"words"`
	}
	_ = pdk.Config(&cfg)
	for i, w := range cfg.Words {
		cfg.Words[i] = strings.ToLower(w)
	}
	return cfg.Words
}

type textInput struct {
	Text string `json:"text"`
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
	return map[string]any{"clean": len(matches) == 0, "matches": matches}, nil
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
	return map[string]string{"text": b.String()}, nil
}

func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
