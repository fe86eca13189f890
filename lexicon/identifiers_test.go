package lexicon_test

import (
	"testing"

	"github.com/lexview/lexview/lexicon"
)

func TestCheckIdentifiers(t *testing.T) {
	for name, c := range map[string]struct {
		check     func(string) error
		good, bad []string
	}{
		"DID": {lexicon.CheckDID,
			[]string{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", "did:web:example.com", "did:web:localhost%3A8080"},
			[]string{"", "did:evil", "did:plc:", "did:plc:a b", "did:plc:\ufffd", "did:plc:x\x00"}},
		"NSID": {lexicon.CheckNSID,
			[]string{"app.bsky.feed.post", "com.example.fooBar"},
			[]string{"", "a.b", "ключ.example.x", "app.test.note/../x", "app.bsky.feed.post\x00"}},
		"record key": {lexicon.CheckRecordKey,
			[]string{"self", "3kabcdefghij2", "a:b~c_d.e-f"},
			[]string{"", ".", "..", "ключ", "a b", "a/b", "k\x00"}},
		"CID": {lexicon.CheckCID,
			[]string{"bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"},
			[]string{"", "short", "not a cid", "Qmbabcdefghijk"}},
	} {
		for _, v := range c.good {
			if err := c.check(v); err != nil {
				t.Errorf("%s %q: %v", name, v, err)
			}
		}
		for _, v := range c.bad {
			if c.check(v) == nil {
				t.Errorf("%s %q accepted", name, v)
			}
		}
	}
}
