package codegen

// goRuntime is the fixed part of the Go package (client.go): the shared
// types and the client machinery the generated methods call. It needs
// only the standard library.
const goRuntime = `
import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Client calls the app's XRPC methods on a Lexview instance. Its fields
// may be set before the first call and must not change after it.
type Client struct {
	// BaseURL is the instance's URL, for example https://appview.example.com.
	BaseURL string
	// ClientKey is the API client key (hvc_...), sent as X-Client-Key.
	ClientKey string
	// ClientSecret, when set, is sent as X-Client-Secret (a confidential
	// client calling from a server; never ship it to a browser or an app).
	ClientSecret string
	// Auth, when set, signs every request before it is sent.
	Auth Authorizer
	// HTTPClient sends the requests; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Header holds headers sent on every call.
	Header http.Header
}

// New returns a Client of the instance at baseURL with the API client
// key clientKey.
func New(baseURL, clientKey string) *Client {
	return &Client{BaseURL: baseURL, ClientKey: clientKey}
}

// Authorizer signs a request: it sets its Authorization header (and its
// DPoP proof: the proof's htm is req.Method, its htu req.URL without the
// query). The client calls it before every request, queries included
// (their user authentication is optional: set nothing to call a query
// anonymously); procedures need it. The client does not implement
// OAuth: the app signs its user in (docs/oauth.md) and makes a fresh
// proof per request.
type Authorizer interface {
	Authorize(req *http.Request) error
}

// AuthorizerFunc is an Authorizer function.
type AuthorizerFunc func(req *http.Request) error

// Authorize calls f.
func (f AuthorizerFunc) Authorize(req *http.Request) error { return f(req) }

// XRPCError is an error answer: a status other than 2xx, or a 200 whose
// body names one of the method's declared errors (a Lexview script
// cannot set the status: it answers {"error", "message"}). A method's
// declared errors are types embedding it; errors.As finds either.
type XRPCError struct {
	// Status is the HTTP status.
	Status int
	// Name is the body's "error": an error name, or Lexview's description.
	Name string
	// Message is the body's "message", if any.
	Message string
	// Body is the raw answer.
	Body []byte
}

func (e *XRPCError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("xrpc: %d %s: %s", e.Status, e.Name, e.Message)
	}
	return fmt.Sprintf("xrpc: %d %s", e.Status, e.Name)
}

// Bytes is atproto's bytes, {"$bytes": base64} in JSON.
type Bytes []byte

// MarshalJSON encodes b as {"$bytes": ...}.
func (b Bytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"$bytes": base64.RawStdEncoding.EncodeToString(b)})
}

// UnmarshalJSON decodes {"$bytes": ...}, padded or not.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var v struct {
		Bytes string ` + "`json:\"$bytes\"`" + `
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(v.Bytes, "="))
	*b = raw
	return err
}

// CIDLink is a CID link, {"$link": cid} in JSON.
type CIDLink struct {
	Link string ` + "`json:\"$link\"`" + `
}

// Blob is a blob reference as records hold it.
type Blob struct {
	LexiconTypeID string   ` + "`json:\"$type,omitempty\"`" + ` // "blob"
	Ref           *CIDLink ` + "`json:\"ref,omitempty\"`" + `
	MimeType      string   ` + "`json:\"mimeType\"`" + `
	Size          int64    ` + "`json:\"size,omitempty\"`" + `
	// CID is the legacy form's reference ({"cid", "mimeType"}).
	CID string ` + "`json:\"cid,omitempty\"`" + `
	// URL is added by Lexview to the blobs of served records: the blob
	// at the author's PDS.
	URL string ` + "`json:\"url,omitempty\"`" + `
}

// Label is a label Lexview serves beside records
// (com.atproto.label.defs#label, without its signature).
type Label struct {
	Ver *int64  ` + "`json:\"ver,omitempty\"`" + `
	Src string  ` + "`json:\"src\"`" + `
	URI string  ` + "`json:\"uri\"`" + `
	CID *string ` + "`json:\"cid,omitempty\"`" + `
	Val string  ` + "`json:\"val\"`" + `
	Neg *bool   ` + "`json:\"neg,omitempty\"`" + `
	Cts string  ` + "`json:\"cts\"`" + `
	Exp *string ` + "`json:\"exp,omitempty\"`" + `
}

// UnknownServedRecord is a served record of a collection the app has no
// lexicon of: its uri and cid, and the whole record in Raw.
type UnknownServedRecord struct {
	URI           string ` + "`json:\"uri\"`" + `
	CID           string ` + "`json:\"cid\"`" + `
	LexiconTypeID string ` + "`json:\"$type\"`" + `
	Raw           json.RawMessage ` + "`json:\"-\"`" + `
}

// UnmarshalJSON keeps the whole record in Raw.
func (r *UnknownServedRecord) UnmarshalJSON(data []byte) error {
	type plain UnknownServedRecord
	if err := json.Unmarshal(data, (*plain)(r)); err != nil {
		return err
	}
	r.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// WriteOutput is the answer of a procedure Lexview writes to the
// caller's PDS itself (no script): the PDS's.
type WriteOutput struct {
	URI    string ` + "`json:\"uri\"`" + `
	CID    string ` + "`json:\"cid\"`" + `
	Commit *struct {
		CID string ` + "`json:\"cid\"`" + `
		Rev string ` + "`json:\"rev\"`" + `
	} ` + "`json:\"commit,omitempty\"`" + `
	ValidationStatus *string ` + "`json:\"validationStatus,omitempty\"`" + `
}

// Ptr returns a pointer to v, for optional fields and parameters.
func Ptr[T any](v T) *T { return &v }

// maxAnswer bounds an answer's body.
const maxAnswer = 64 << 20

// request is one call.
type request struct {
	method, nsid string
	params       url.Values
	input        any       // JSON input, nil for none
	body         io.Reader // binary input
	contentType  string
	out          any     // decoded JSON output, nil to ignore it
	rawOut       *[]byte // binary output
	errs         func(*XRPCError) error
	declared     []string
}

func (c *Client) do(ctx context.Context, r request) error {
	u := strings.TrimRight(c.BaseURL, "/") + "/xrpc/" + r.nsid
	if len(r.params) > 0 {
		u += "?" + r.params.Encode()
	}
	body := r.body
	if r.input != nil {
		raw, err := json.Marshal(r.input)
		if err != nil {
			return fmt.Errorf("%s: %w", r.nsid, err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return err
	}
	for name, values := range c.Header {
		req.Header[name] = slices.Clone(values)
	}
	req.Header.Set("X-Client-Key", c.ClientKey)
	if c.ClientSecret != "" {
		req.Header.Set("X-Client-Secret", c.ClientSecret)
	}
	if r.contentType != "" && body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	if c.Auth != nil {
		if err := c.Auth.Authorize(req); err != nil {
			return fmt.Errorf("%s: authorize: %w", r.nsid, err)
		}
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s: %w", r.nsid, err)
	}
	if resp.StatusCode/100 != 2 {
		return r.fail(resp.StatusCode, raw)
	}
	if r.rawOut != nil {
		*r.rawOut = raw
		return nil
	}
	if len(r.declared) > 0 {
		var e struct {
			Error *string ` + "`json:\"error\"`" + `
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != nil && slices.Contains(r.declared, *e.Error) {
			return r.fail(resp.StatusCode, raw)
		}
	}
	if r.out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, r.out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", r.nsid, err)
	}
	return nil
}

// fail returns the error an error answer is.
func (r request) fail(status int, raw []byte) error {
	e := &XRPCError{Status: status, Body: raw}
	var body struct {
		Error   string ` + "`json:\"error\"`" + `
		Message string ` + "`json:\"message\"`" + `
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != "" {
		e.Name, e.Message = body.Error, body.Message
	} else {
		e.Name, e.Message = http.StatusText(status), strings.TrimSpace(string(raw))
	}
	if r.errs != nil {
		return r.errs(e)
	}
	return e
}

// typeOf returns the $type of a JSON object.
func typeOf(data []byte) (string, error) {
	var v struct {
		Type string ` + "`json:\"$type\"`" + `
	}
	err := json.Unmarshal(data, &v)
	return v.Type, err
}

// isType reports whether t names the definition id (a main definition
// also as id#main).
func isType(t, id string) bool {
	return t == id || (!strings.Contains(id, "#") && t == id+"#main")
}

var errNoMember = errors.New("union: no member set")
`
