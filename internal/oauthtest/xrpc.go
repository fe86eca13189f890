package oauthtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net/http"
	"slices"
	"strings"
)

// maxRecordInput bounds createRecord and putRecord bodies.
const maxRecordInput = 1 << 20

// serveXRPC routes /xrpc/{nsid}.
func (s *Server) serveXRPC(w http.ResponseWriter, r *http.Request) {
	nsid := r.PathValue("nsid")
	s.mu.Lock()
	s.calls[nsid]++
	s.mu.Unlock()

	type route struct {
		method  string
		auth    bool
		handler func(http.ResponseWriter, *http.Request, string)
	}
	routes := map[string]route{
		"com.atproto.repo.createRecord": {http.MethodPost, true, s.createRecord},
		"com.atproto.repo.putRecord":    {http.MethodPost, true, s.putRecord},
		"com.atproto.repo.deleteRecord": {http.MethodPost, true, s.deleteRecord},
		"com.atproto.repo.uploadBlob":   {http.MethodPost, true, s.uploadBlob},
		"com.atproto.repo.getRecord":    {http.MethodGet, false, s.getRecord},
		"com.atproto.server.getSession": {http.MethodGet, true, s.getSession},
	}
	rt, ok := routes[nsid]
	if !ok {
		writeXRPCError(w, http.StatusNotImplemented, "MethodNotImplemented", "Method Not Implemented")
		return
	}
	if r.Method != rt.method {
		writeXRPCError(w, http.StatusMethodNotAllowed, "InvalidRequest", "Incorrect HTTP method")
		return
	}
	did := ""
	if rt.auth {
		if did, ok = s.authenticate(w, r); !ok {
			return
		}
		s.mu.Lock()
		f, fail := s.failNext[nsid]
		delete(s.failNext, nsid)
		s.mu.Unlock()
		if fail {
			writeXRPCError(w, f.status, f.errName, f.message)
			return
		}
	}
	rt.handler(w, r, did)
}

// recordInput is the input of createRecord and putRecord.
type recordInput struct {
	Repo       string          `json:"repo"`
	Collection string          `json:"collection"`
	Rkey       string          `json:"rkey"`
	Validate   *bool           `json:"validate"`
	Record     json.RawMessage `json:"record"`
	SwapRecord *string         `json:"swapRecord"`
}

// readRecordInput decodes and checks a write's input as a PDS does; on
// failure it has written the response.
func (s *Server) readRecordInput(w http.ResponseWriter, r *http.Request, did string) (recordInput, json.RawMessage, bool) {
	var in recordInput
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRecordInput))
	if err := dec.Decode(&in); err != nil {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Invalid request body: "+err.Error())
		return in, nil, false
	}
	if in.Repo == "" || in.Collection == "" || len(in.Record) == 0 {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the properties repo, collection and record")
		return in, nil, false
	}
	if in.Repo != did && in.Repo != s.handle(did) {
		writeXRPCError(w, http.StatusUnauthorized, "AuthenticationRequired", "Authentication Required")
		return in, nil, false
	}
	if !validNSID(in.Collection) {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Invalid collection: "+in.Collection)
		return in, nil, false
	}
	if in.Rkey != "" && !validRecordKey(in.Rkey) {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Invalid record key: "+in.Rkey)
		return in, nil, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(in.Record, &fields); err != nil || fields == nil {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Record must be an object")
		return in, nil, false
	}
	if raw, ok := fields["$type"]; ok {
		var typ string
		if json.Unmarshal(raw, &typ) != nil || typ != in.Collection {
			writeXRPCError(w, http.StatusBadRequest, "InvalidRequest",
				"Invalid $type: expected "+in.Collection+", got "+string(raw))
			return in, nil, false
		}
	} else {
		fields["$type"], _ = json.Marshal(in.Collection)
	}
	value, _ := json.Marshal(fields)
	return in, value, true
}

func (s *Server) createRecord(w http.ResponseWriter, r *http.Request, did string) {
	in, value, ok := s.readRecordInput(w, r, did)
	if !ok {
		return
	}
	s.mu.Lock()
	if in.Rkey == "" {
		in.Rkey = s.nextTIDLocked()
	}
	uri := "at://" + did + "/" + in.Collection + "/" + in.Rkey
	if _, exists := s.records[uri]; exists {
		s.mu.Unlock()
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Record already exists: "+uri)
		return
	}
	rec := s.storeLocked(did, in.Collection, in.Rkey, value)
	s.ops = append(s.ops, Operation{Action: "create", Record: rec})
	s.mu.Unlock()
	s.writeCommit(w, rec)
}

func (s *Server) putRecord(w http.ResponseWriter, r *http.Request, did string) {
	in, value, ok := s.readRecordInput(w, r, did)
	if !ok {
		return
	}
	if in.Rkey == "" {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the property rkey")
		return
	}
	uri := "at://" + did + "/" + in.Collection + "/" + in.Rkey
	s.mu.Lock()
	if in.SwapRecord != nil {
		cur, exists := s.records[uri]
		if !exists || cur.CID != *in.SwapRecord {
			s.mu.Unlock()
			msg := "Record was at null"
			if exists {
				msg = "Record was at " + cur.CID
			}
			writeXRPCError(w, http.StatusBadRequest, "InvalidSwap", msg)
			return
		}
	}
	if cur, exists := s.records[uri]; exists && cur.CID == cidFor(0x71, value) {
		s.mu.Unlock()
		// As on the reference PDS, an unchanged record is no write: the
		// answer has no commit.
		writeJSON(w, http.StatusOK, map[string]any{"uri": uri, "cid": cur.CID, "validationStatus": "unknown"})
		return
	}
	rec := s.storeLocked(did, in.Collection, in.Rkey, value)
	s.ops = append(s.ops, Operation{Action: "update", Record: rec})
	s.mu.Unlock()
	s.writeCommit(w, rec)
}

// deleteRecord removes a record of the session's repository (a missing
// record is not an error, as on the reference PDS).
func (s *Server) deleteRecord(w http.ResponseWriter, r *http.Request, did string) {
	var in struct {
		Repo       string `json:"repo"`
		Collection string `json:"collection"`
		Rkey       string `json:"rkey"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil || in.Collection == "" || in.Rkey == "" {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the properties repo, collection and rkey")
		return
	}
	if in.Repo != did {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Input/repo must be the session's DID")
		return
	}
	uri := "at://" + did + "/" + in.Collection + "/" + in.Rkey
	s.mu.Lock()
	delete(s.records, uri)
	s.order = slices.DeleteFunc(s.order, func(u string) bool { return u == uri })
	rev := s.nextTIDLocked()
	s.ops = append(s.ops, Operation{Action: "delete", Record: Record{DID: did, Collection: in.Collection, Rkey: in.Rkey, URI: uri, Rev: rev}})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"commit": map[string]string{"cid": cidFor(0x71, []byte(rev+uri)), "rev": rev}})
}

// storeLocked stores a record version and logs the write.
func (s *Server) storeLocked(did, collection, rkey string, value json.RawMessage) Record {
	uri := "at://" + did + "/" + collection + "/" + rkey
	rev := s.nextTIDLocked()
	rec := Record{
		DID: did, Collection: collection, Rkey: rkey, URI: uri,
		CID: cidFor(0x71, value), Rev: rev, Value: value,
	}
	if _, exists := s.records[uri]; !exists {
		s.order = append(s.order, uri)
	}
	stored := rec
	s.records[uri] = &stored
	s.writes = append(s.writes, rec)
	return rec
}

func (s *Server) writeCommit(w http.ResponseWriter, rec Record) {
	if s.opts.MisreportWrite != nil {
		rec = s.opts.MisreportWrite(rec)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"uri":              rec.URI,
		"cid":              rec.CID,
		"commit":           map[string]string{"cid": cidFor(0x71, []byte(rec.Rev+rec.URI)), "rev": rec.Rev},
		"validationStatus": "unknown",
	})
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request, _ string) {
	q := r.URL.Query()
	repo, collection, rkey := q.Get("repo"), q.Get("collection"), q.Get("rkey")
	if repo == "" || collection == "" || rkey == "" {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "Params must have the properties repo, collection and rkey")
		return
	}
	uri := "at://" + repo + "/" + collection + "/" + rkey
	s.mu.Lock()
	rec, ok := s.records[uri]
	var out Record
	if ok {
		out = *rec
	}
	s.mu.Unlock()
	if !ok || (q.Get("cid") != "" && q.Get("cid") != out.CID) {
		writeXRPCError(w, http.StatusBadRequest, "RecordNotFound", "Could not locate record: "+uri)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"uri": out.URI, "cid": out.CID, "value": out.Value})
}

func (s *Server) getSession(w http.ResponseWriter, _ *http.Request, did string) {
	writeJSON(w, http.StatusOK, map[string]any{"did": did, "handle": s.handle(did), "active": true})
}

// uploadBlob streams the body through a hash, counting bytes; nothing is
// buffered or kept.
func (s *Server) uploadBlob(w http.ResponseWriter, r *http.Request, did string) {
	mime := r.Header.Get("Content-Type")
	if mime == "" {
		mime = "application/octet-stream"
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r.Body, s.opts.MaxBlobSize+1))
	if err != nil {
		writeXRPCError(w, http.StatusBadRequest, "InvalidRequest", "reading the blob failed: "+err.Error())
		return
	}
	if n > s.opts.MaxBlobSize {
		writeXRPCError(w, http.StatusBadRequest, "BlobTooLarge", "This file is too large")
		return
	}
	cid := cidFromHash(0x55, h)
	s.mu.Lock()
	s.blobList = append(s.blobList, Blob{DID: did, CID: cid, MimeType: mime, Size: n})
	s.mu.Unlock()
	s.blobs.Add(1)
	s.blobBytes.Add(n)
	writeJSON(w, http.StatusOK, map[string]any{"blob": map[string]any{
		"$type": "blob", "ref": map[string]string{"$link": cid}, "mimeType": mime, "size": n,
	}})
}

// SeedRecord stores a record directly (not through XRPC), as if the user
// had written it, and returns it. $type is set to collection if absent.
func (s *Server) SeedRecord(did, collection, rkey string, value json.RawMessage) (Record, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(value, &fields); err != nil || fields == nil {
		return Record{}, errors.New("oauthtest: record must be a JSON object")
	}
	if _, ok := fields["$type"]; !ok {
		fields["$type"], _ = json.Marshal(collection)
	}
	v, _ := json.Marshal(fields)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storeLocked(did, collection, rkey, v), nil
}

// SetProfile stores did's app.bsky.actor.profile record (rkey self), as
// getRecord serves it to profile look-ups.
func (s *Server) SetProfile(did string, profile json.RawMessage) (Record, error) {
	return s.SeedRecord(did, "app.bsky.actor.profile", "self", profile)
}

// Record returns the stored record at an AT URI.
func (s *Server) Record(uri string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[uri]
	if !ok {
		return Record{}, false
	}
	return *r, true
}

// Records returns the current version of every record, in order of first
// write.
func (s *Server) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.order))
	for _, uri := range s.order {
		if rec, ok := s.records[uri]; ok {
			out = append(out, *rec)
		}
	}
	return out
}

// Writes returns every successful write (and seed), in order.
func (s *Server) Writes() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.writes...)
}

// Operations returns the writes made through XRPC (createRecord,
// putRecord and deleteRecord; not SeedRecord's), in order. A putRecord
// of an unchanged record is none.
func (s *Server) Operations() []Operation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Operation(nil), s.ops...)
}

// Blobs returns the uploaded blobs, in order.
func (s *Server) Blobs() []Blob {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Blob(nil), s.blobList...)
}

func (s *Server) handle(did string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.handles[did]; ok {
		return h
	}
	return "handle.invalid"
}

// tidAlphabet is the base32-sortable alphabet of atproto TIDs.
const tidAlphabet = "234567abcdefghijklmnopqrstuvwxyz"

// nextTIDLocked returns a TID (13 characters) greater than every earlier
// one.
func (s *Server) nextTIDLocked() string {
	v := s.opts.Now().UnixMicro() << 10
	if v <= s.lastTID {
		v = s.lastTID + 1
	}
	s.lastTID = v
	var b [13]byte
	for i := 12; i >= 0; i-- {
		b[i] = tidAlphabet[v&31]
		v >>= 5
	}
	return string(b[:])
}

var cidEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// cidFor returns a CIDv1 string (base32, sha2-256) for data with codec
// (0x71 dag-cbor for records, 0x55 raw for blobs). Records are hashed as
// their JSON, not DAG-CBOR: the CIDs are well formed but not the ones a
// real PDS would compute.
func cidFor(codec byte, data []byte) string {
	h := sha256.New()
	h.Write(data)
	return cidFromHash(codec, h)
}

func cidFromHash(codec byte, h hash.Hash) string {
	var buf bytes.Buffer
	buf.Write([]byte{0x01, codec, 0x12, 0x20})
	buf.Write(h.Sum(nil))
	return "b" + cidEncoding.EncodeToString(buf.Bytes())
}

// validNSID is a loose NSID check: at least three dot-separated segments
// of letters, digits and hyphens.
func validNSID(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 3 || len(s) > 317 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 63 {
			return false
		}
		for _, c := range p {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// validRecordKey is the atproto record-key syntax.
func validRecordKey(k string) bool {
	if k == "" || len(k) > 512 || k == "." || k == ".." {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:~-", c)) {
			return false
		}
	}
	return true
}
