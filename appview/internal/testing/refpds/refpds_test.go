package refpds_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/testing/refpds"
)

const noteNSID = "com.example.note"

// TestSmoke drives the reference PDS over plain HTTP: accounts, records in a
// collection without a lexicon, listing them back, and DID resolution
// through its PLC directory.
func TestSmoke(t *testing.T) {
	start := time.Now()
	n := refpds.Start(t)
	if !strings.HasPrefix(n.PDSURL, "http://127.0.0.1:") || !strings.HasPrefix(n.PLCURL, "http://127.0.0.1:") {
		t.Fatalf("not on loopback: PDS %s, PLC %s", n.PDSURL, n.PLCURL)
	}
	up := time.Now()

	alice := n.CreateAccount(t, "alice")
	bob := n.CreateAccount(t, "bob.test")
	if alice.Handle != "alice.test" || !strings.HasPrefix(alice.DID, "did:plc:") || alice.AccessJwt == "" {
		t.Fatalf("alice: %+v", alice)
	}
	if bob.DID == alice.DID {
		t.Fatalf("two accounts share %s", bob.DID)
	}

	// Three notes by alice.
	created := map[string]string{} // uri -> cid
	texts := map[string]string{}   // uri -> text
	for i := range 3 {
		text := fmt.Sprintf("note %d", i)
		uri, cid := alice.CreateRecord(t, noteNSID, map[string]any{
			"$type":     noteNSID,
			"text":      text,
			"createdAt": time.Now().UTC().Format(time.RFC3339),
		})
		if !strings.HasPrefix(uri, "at://"+alice.DID+"/"+noteNSID+"/") || cid == "" {
			t.Fatalf("createRecord: uri %q cid %q", uri, cid)
		}
		created[uri], texts[uri] = cid, text
	}

	// bob: put, replace, and delete.
	uri1, cid1 := bob.PutRecord(t, noteNSID, "self", map[string]any{"text": "first", "createdAt": time.Now().UTC().Format(time.RFC3339)})
	uri2, cid2 := bob.PutRecord(t, noteNSID, "self", map[string]any{"text": "second", "createdAt": time.Now().UTC().Format(time.RFC3339)})
	if uri1 != uri2 || uri1 != "at://"+bob.DID+"/"+noteNSID+"/self" || cid1 == cid2 {
		t.Fatalf("putRecord twice: %s %s / %s %s", uri1, cid1, uri2, cid2)
	}
	bob.CreateRecord(t, noteNSID, map[string]any{"text": "gone soon", "createdAt": time.Now().UTC().Format(time.RFC3339)})
	bob.PutRecord(t, noteNSID, "doomed", map[string]any{"text": "gone", "createdAt": time.Now().UTC().Format(time.RFC3339)})
	bob.DeleteRecord(t, noteNSID, "doomed")

	// com.atproto.repo.listRecords, unauthenticated.
	type record struct {
		URI   string         `json:"uri"`
		CID   string         `json:"cid"`
		Value map[string]any `json:"value"`
	}
	var list struct {
		Records []record `json:"records"`
	}
	n.Query(t, "com.atproto.repo.listRecords", url.Values{"repo": {alice.DID}, "collection": {noteNSID}}, &list)
	if len(list.Records) != 3 {
		t.Fatalf("listRecords(alice): %d records, want 3: %+v", len(list.Records), list.Records)
	}
	for _, r := range list.Records {
		if created[r.URI] != r.CID || r.Value["text"] != texts[r.URI] || r.Value["$type"] != noteNSID {
			t.Errorf("listRecords(alice): unexpected %+v", r)
		}
	}
	list.Records = nil
	n.Query(t, "com.atproto.repo.listRecords", url.Values{"repo": {bob.Handle}, "collection": {noteNSID}}, &list)
	var bobKeys []string
	for _, r := range list.Records {
		bobKeys = append(bobKeys, path.Base(r.URI))
		if path.Base(r.URI) == "self" && (r.CID != cid2 || r.Value["text"] != "second") {
			t.Errorf("listRecords(bob): self is %+v, want cid %s text second", r, cid2)
		}
	}
	if len(bobKeys) != 2 || !slices.Contains(bobKeys, "self") || slices.Contains(bobKeys, "doomed") {
		t.Errorf("listRecords(bob): record keys %v, want self and one TID", bobKeys)
	}

	// com.atproto.sync.listRepos.
	var repos struct {
		Repos []struct {
			DID    string `json:"did"`
			Head   string `json:"head"`
			Rev    string `json:"rev"`
			Active bool   `json:"active"`
		} `json:"repos"`
	}
	n.Query(t, "com.atproto.sync.listRepos", url.Values{"limit": {"100"}}, &repos)
	found := 0
	for _, r := range repos.Repos {
		if r.DID == alice.DID || r.DID == bob.DID {
			found++
			if r.Head == "" || r.Rev == "" || !r.Active {
				t.Errorf("listRepos: %+v", r)
			}
		}
	}
	if found != 2 {
		t.Errorf("listRepos: found %d of the 2 accounts in %+v", found, repos.Repos)
	}

	// Handles resolve through the PDS.
	var resolved struct {
		DID string `json:"did"`
	}
	n.Query(t, "com.atproto.identity.resolveHandle", url.Values{"handle": {bob.Handle}}, &resolved)
	if resolved.DID != bob.DID {
		t.Errorf("resolveHandle(%s) = %s, want %s", bob.Handle, resolved.DID, bob.DID)
	}

	// The DID document, from the PLC directory.
	resp, err := http.Get(n.PLCURL + "/" + alice.DID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/%s: %s", n.PLCURL, alice.DID, resp.Status)
	}
	var doc struct {
		ID                 string   `json:"id"`
		AlsoKnownAs        []string `json:"alsoKnownAs"`
		VerificationMethod []struct {
			ID                 string `json:"id"`
			Type               string `json:"type"`
			Controller         string `json:"controller"`
			PublicKeyMultibase string `json:"publicKeyMultibase"`
		} `json:"verificationMethod"`
		Service []struct {
			ID              string `json:"id"`
			Type            string `json:"type"`
			ServiceEndpoint string `json:"serviceEndpoint"`
		} `json:"service"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("DID document: %v", err)
	}
	if doc.ID != alice.DID || !slices.Contains(doc.AlsoKnownAs, "at://"+alice.Handle) {
		t.Errorf("DID document: id %s, alsoKnownAs %v", doc.ID, doc.AlsoKnownAs)
	}
	hasKey := false
	for _, vm := range doc.VerificationMethod {
		if vm.ID == "#atproto" || vm.ID == alice.DID+"#atproto" {
			hasKey = vm.PublicKeyMultibase != ""
			t.Logf("#atproto key: type %s, publicKeyMultibase %s", vm.Type, vm.PublicKeyMultibase)
		}
	}
	if !hasKey {
		t.Errorf("DID document has no #atproto verification method: %+v", doc.VerificationMethod)
	}
	hasPDS := false
	for _, s := range doc.Service {
		if (s.ID == "#atproto_pds" || s.ID == alice.DID+"#atproto_pds") && s.Type == "AtprotoPersonalDataServer" {
			hasPDS = true
			pub, err := url.Parse(s.ServiceEndpoint)
			if err != nil || s.ServiceEndpoint != n.PDSPublicURL {
				t.Errorf("#atproto_pds endpoint %q, want %q", s.ServiceEndpoint, n.PDSPublicURL)
				continue
			}
			loop, _ := url.Parse(n.PDSURL)
			if pub.Port() != loop.Port() {
				t.Errorf("#atproto_pds endpoint %s is not the PDS at %s", s.ServiceEndpoint, n.PDSURL)
			}
		}
	}
	if !hasPDS {
		t.Errorf("DID document has no AtprotoPersonalDataServer service: %+v", doc.Service)
	}

	t.Logf("timings: network up %v, accounts+records+checks %v", up.Sub(start).Round(time.Millisecond), time.Since(up).Round(time.Millisecond))
}
