package lexicon_test

import (
	"errors"
	"testing"

	"github.com/lexview/lexview/lexicon"
)

func TestCheckRecordText(t *testing.T) {
	for _, ok := range []string{
		`{"text":"plain"}`,
		`{"text":"élan 日本 😀"}`,
		`{"text":"\ud83d\ude00 a pair"}`,
		`{"text":"\u00e9\uFFFD\u2028"}`,
		`{"text":"\\u0000 is an escaped backslash, then text"}`,
		`{"text":"\\\\ud800 likewise"}`,
		`{"text":"\u0001 is fine, so is \n and \""}`,
		`{}`,
	} {
		if err := lexicon.CheckRecordText([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"{\"text\":\"\xff\"}",
		"{\"text\":\"\xc3\"}",         // truncated sequence
		"{\"text\":\"\xed\xa0\x80\"}", // a surrogate encoded in UTF-8
		"{\"t\xe9xt\":\"key\"}",
		`{"text":"\ud800"}`,
		`{"text":"\ud800x"}`,
		`{"text":"\ud800\u0041"}`,
		`{"text":"\udc00"}`,
		`{"text":"\ude00\ud83d"}`,
		`{"text":"a\u0000b"}`,
		`{"a\u0000":1}`,
		`{"text":"\\\u0000"}`,
	} {
		err := lexicon.CheckRecordText([]byte(bad))
		if !errors.Is(err, lexicon.ErrRecordText) {
			t.Errorf("%q: %v, want ErrRecordText", bad, err)
		}
	}
}
