package storage

import (
	"testing"
	"time"
)

func TestCursorRoundTripAndScope(t *testing.T) {
	p := Position{Time: time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC), URI: "at://did:plc:x/app.test.post/3k"}
	c := EncodeCursor("a", p)
	got, err := DecodeCursor("a", c)
	if err != nil || !got.Time.Equal(p.Time) || got.URI != p.URI {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := DecodeCursor("b", c); err != ErrInvalidCursor {
		t.Fatalf("cursor accepted under another scope: %v", err)
	}
	for i := range c {
		bad := []byte(c)
		bad[i] ^= 0x01
		if got, err := DecodeCursor("a", string(bad)); err == nil && got != p {
			t.Fatalf("corruption at %d decoded to a different position %+v", i, got)
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add("records", EncodeCursor("records", Position{Time: time.Unix(1, 0), URI: "at://did:plc:a/b.c.d/e"}))
	f.Add("records", "")
	f.Add("", "AQ")
	f.Fuzz(func(t *testing.T, scope, cursor string) {
		p, err := DecodeCursor(scope, cursor)
		if err != nil {
			if err != ErrInvalidCursor {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		again, err := DecodeCursor(scope, EncodeCursor(scope, p))
		if err != nil || !again.Time.Equal(p.Time) || again.URI != p.URI {
			t.Fatalf("re-encoding a decoded cursor changed it: %+v vs %+v (%v)", p, again, err)
		}
	})
}
