// A program that calls a live Lexview instance through the generated Go
// client (appview/codegen's TestGoClientLive builds and runs it). It
// reads the instance from the environment and exits non-zero, listing
// what failed, when an answer is not the expected one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"example.com/app/lexclient"
)

var failures []string

func check(ok bool, format string, args ...any) bool {
	if !ok {
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	return ok
}

func main() {
	ctx := context.Background()
	c := lexclient.New(os.Getenv("BASE_URL"), os.Getenv("CLIENT_KEY"))
	want := strings.Split(os.Getenv("NOTES"), ",") // newest first
	imageNote, missing := os.Getenv("IMAGE_NOTE"), os.Getenv("MISSING_NOTE")

	// The default list, two records a page.
	var got []string
	pages := 0
	for page, err := range c.ComExampleNotesListNotesPages(ctx, lexclient.ComExampleNotesListNotes_Params{Limit: lexclient.Ptr(int64(2))}) {
		if err != nil {
			check(false, "listNotes page %d: %v", pages, err)
			break
		}
		pages++
		for _, r := range page.Records {
			got = append(got, r.URI)
			check(r.CID != "" && r.LexiconTypeID == "com.example.notes.note" && r.Text != "", "listNotes record %s: %+v", r.URI, r)
		}
	}
	check(slices.Equal(got, want), "listNotes: %v, want %v", got, want)
	check(pages == (len(want)+1)/2, "listNotes: %d pages", pages)

	// One record of the default get, with its union member and blob.
	one, err := c.ComExampleNotesListNotesRecord(ctx, imageNote)
	if check(err == nil, "listNotesRecord: %v", err); err == nil {
		r := one.Record
		check(r.URI == imageNote && r.CID != "", "listNotesRecord: uri %q cid %q", r.URI, r.CID)
		img := r.Embed
		check(img != nil && img.ComExampleNotesDefs_Image != nil, "listNotesRecord: embed %+v", img)
		if img != nil && img.ComExampleNotesDefs_Image != nil {
			b := img.ComExampleNotesDefs_Image.Image
			check(b.Ref != nil && b.MimeType == "image/png" && strings.HasPrefix(b.URL, "https://pds.alice.test/xrpc/com.atproto.sync.getBlob?"), "blob: %+v", b)
		}
		check(len(r.Tags) == 1 && r.Tags[0] == "go" && r.Visibility != nil && *r.Visibility == "public", "listNotesRecord: %+v", r)
	}

	// A default get of nothing: 404.
	_, err = c.ComExampleNotesListNotesRecord(ctx, missing)
	var xe *lexclient.XRPCError
	check(errors.As(err, &xe) && xe.Status == 404 && xe.Name == "record not found", "missing record: %v", err)

	// A scripted query with a declared output and errors.
	note, err := c.ComExampleNotesGetNote(ctx, lexclient.ComExampleNotesGetNote_Params{URI: imageNote})
	check(err == nil && note.Note != nil && note.Note.Likes == 3 && note.Note.URI == imageNote && note.Note.Note != nil && note.Note.Note.Text != "",
		"getNote: %+v %v", note, err)
	_, err = c.ComExampleNotesGetNote(ctx, lexclient.ComExampleNotesGetNote_Params{URI: missing})
	var notFound *lexclient.ComExampleNotesGetNote_NotFoundError
	check(errors.As(err, &notFound) && notFound.Message == "no note at "+missing, "getNote of nothing: %T %v", err, err)
	check(errors.As(err, &xe) && xe.Name == "NotFound", "getNote of nothing as an XRPCError: %v", err)

	// A scripted query that pages with its own cursor.
	var found []string
	for page, err := range c.ComExampleNotesSearchNotesPages(ctx, lexclient.ComExampleNotesSearchNotes_Params{Tag: "go", Limit: lexclient.Ptr(int64(2))}) {
		if err != nil {
			check(false, "searchNotes: %v", err)
			break
		}
		for _, n := range page.Notes {
			found = append(found, n.URI)
		}
	}
	check(slices.Equal(found, want), "searchNotes: %v, want %v", found, want)

	// A procedure, signed by the auth hook with the proofs the test made.
	proofs := strings.Split(os.Getenv("PROOFS"), ",")
	c.Auth = lexclient.AuthorizerFunc(func(req *http.Request) error {
		if len(proofs) == 0 {
			return errors.New("no proof left")
		}
		req.Header.Set("Authorization", "DPoP "+os.Getenv("ACCESS_TOKEN"))
		req.Header.Set("DPoP", proofs[0])
		proofs = proofs[1:]
		return nil
	})
	_, err = c.ComExampleNotesCreateNote(ctx, lexclient.ComExampleNotesCreateNote_Input{Text: "far too long a note"})
	var tooLong *lexclient.ComExampleNotesCreateNote_TextTooLongError
	check(errors.As(err, &tooLong) && tooLong.Status == 200, "createNote too long: %T %v", err, err)
	in := lexclient.ComExampleNotesCreateNote_Input{Text: "short", Embed: &lexclient.ComExampleNotesCreateNote_Input_Embed{
		ComExampleNotesDefs_Link: &lexclient.ComExampleNotesDefs_Link{URI: "https://example.com"}}}
	raw, _ := json.Marshal(in)
	check(strings.Contains(string(raw), `"$type":"com.example.notes.defs#link"`), "union input: %s", raw)
	out, err := c.ComExampleNotesCreateNote(ctx, in)
	check(err == nil && out.Ok && out.Caller != nil && *out.Caller == os.Getenv("CALLER"), "createNote: %+v %v", out, err)

	// Lexview's default procedure: the note written to the caller's PDS.
	put, err := c.ComExampleNotesPutNote(ctx, lexclient.ComExampleNotesPutNote_Input{
		ComExampleNotesNote_Record: lexclient.ComExampleNotesNote_Record{Text: "written", CreatedAt: "2026-04-01T00:00:00Z"}})
	if check(err == nil && strings.HasPrefix(put.URI, "at://"+os.Getenv("CALLER")+"/com.example.notes.note/") && put.CID != "", "putNote: %+v %v", put, err) {
		c.Auth = nil
		got, err := c.ComExampleNotesListNotesRecord(ctx, put.URI)
		check(err == nil && got.Record.Text == "written" && got.Record.CID == put.CID, "the note written: %+v %v", got, err)
	}

	// Unions and bytes as JSON: an open union keeps a member of another
	// $type, a closed one refuses it.
	var rec lexclient.ComExampleNotesNote_Record
	err = json.Unmarshal([]byte(`{"$type":"com.example.notes.note","text":"t","createdAt":"2026-01-01T00:00:00Z",
		"embed":{"$type":"com.example.other#video","src":"x"},"digest":{"$bytes":"AQID"},
		"attachments":[{"$type":"com.example.notes.note#quote","uri":"at://a/b/c"}]}`), &rec)
	check(err == nil && rec.Embed != nil && string(rec.Embed.Unknown) == `{"$type":"com.example.other#video","src":"x"}` &&
		string(rec.Digest) == "\x01\x02\x03" && len(rec.Attachments) == 1 && rec.Attachments[0].ComExampleNotesNote_Quote != nil,
		"decoding a record: %+v %v", rec, err)
	raw, _ = json.Marshal(rec)
	check(strings.Contains(string(raw), `"embed":{"$type":"com.example.other#video","src":"x"}`) && strings.Contains(string(raw), `"digest":{"$bytes":"AQID"}`),
		"encoding a record: %s", raw)
	err = json.Unmarshal([]byte(`{"attachments":[{"$type":"com.example.other#video"}]}`), &rec)
	check(err != nil, "a closed union took another $type")

	if len(failures) > 0 {
		fmt.Println(strings.Join(failures, "\n"))
		os.Exit(1)
	}
	fmt.Println("ok")
}
