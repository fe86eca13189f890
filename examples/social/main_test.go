package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/apptest"
)

// TestSocialApp runs the example against an embedded instance and calls
// each of its queries: the counts and pages come from the link index, the
// topic listing from the value index, the search from the text index.
func TestSocialApp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	type started struct{ base, key string }
	up := make(chan started, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, filepath.Join(t.TempDir(), "social.db"), 0, func(base, key string) { up <- started{base, key} })
	}()
	var s started
	select {
	case s = <-up:
	case err := <-done:
		t.Fatalf("the app did not start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the app did not start in time")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the app did not stop cleanly: %v", err)
		}
	}()
	get := func(method string, params url.Values, out any) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.base+"/xrpc/"+method+"?"+params.Encode(), nil)
		req.Header.Set("X-Client-Key", s.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", method, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	first := postURI("3kseedpost001")

	var post struct {
		Post       map[string]any `json:"post"`
		LikeCount  int            `json:"likeCount"`
		ReplyCount int            `json:"replyCount"`
		LikedBy    []string       `json:"likedBy"`
	}
	get("com.example.social.getPost", url.Values{"uri": {first}}, &post)
	if post.Post["uri"] != first || post.LikeCount != 2 || post.ReplyCount != 1 ||
		len(post.LikedBy) != 2 || post.LikedBy[0] != carol {
		t.Errorf("getPost: %+v", post)
	}

	var replies struct {
		Replies []map[string]any `json:"replies"`
		Total   int              `json:"total"`
	}
	get("com.example.social.getReplies", url.Values{"uri": {first}}, &replies)
	if replies.Total != 1 || len(replies.Replies) != 1 || replies.Replies[0]["text"] != "Which lexicon did you start with?" {
		t.Errorf("getReplies: %+v", replies)
	}

	var followers struct {
		Followers []string `json:"followers"`
		Total     int      `json:"total"`
	}
	get("com.example.social.getFollowers", url.Values{"actor": {alice}}, &followers)
	if followers.Total != 2 || len(followers.Followers) != 2 || followers.Followers[0] != carol {
		t.Errorf("getFollowers: %+v", followers)
	}

	var topic struct {
		Records []map[string]any `json:"records"`
	}
	get("com.example.social.listTopic", url.Values{"topic": {"lexicons"}}, &topic)
	if len(topic.Records) != 3 || topic.Records[0]["text"] != "Which lexicon did you start with?" {
		t.Errorf("listTopic: %+v", topic)
	}

	var found struct {
		Posts   []map[string]any `json:"posts"`
		Error   string           `json:"error"`
		Message string           `json:"message"`
	}
	get("com.example.social.searchPosts", url.Values{"q": {"lexicon"}}, &found)
	if len(found.Posts) != 2 || found.Error != "" {
		t.Errorf("searchPosts lexicon: %+v", found)
	}
	found.Posts = nil
	get("com.example.social.searchPosts", url.Values{"q": {"tomatoes"}}, &found)
	if len(found.Posts) != 1 || found.Posts[0]["topic"] != "gardening" {
		t.Errorf("searchPosts tomatoes: %+v", found)
	}
	found.Posts = nil
	get("com.example.social.searchPosts", url.Values{"q": {`"unclosed`}}, &found)
	if found.Error != "InvalidQuery" || found.Message == "" {
		t.Errorf("a malformed search: %+v", found)
	}

	var count struct {
		Total int `json:"total"`
	}
	get("blue.microcosm.links.getBacklinksCount", url.Values{"subject": {first}, "source": {"com.example.social.like:subject.uri"}}, &count)
	if count.Total != 2 {
		t.Errorf("getBacklinksCount: %+v", count)
	}
}

// TestSocialAppTests runs the tests the app folder declares (app/tests:
// each query over the fixtures, and like events changing the counts), as
// `appview test examples/social/app` does.
func TestSocialAppTests(t *testing.T) {
	t.Parallel()
	suite, err := apptest.Load("app")
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tests) < 5 {
		t.Fatalf("%d tests in app/tests", len(suite.Tests))
	}
	report := apptest.Run(context.Background(), suite, apptest.Options{})
	var out strings.Builder
	report.Print(&out)
	if !report.Passed() {
		t.Fatalf("the app's tests:\n%s", out.String())
	}
	t.Logf("the app's tests:\n%s", out.String())
}
