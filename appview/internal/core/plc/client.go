package plc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAnswer bounds what the client reads of a PLC directory's answer.
const maxAnswer = 1 << 20

// Client talks to a PLC directory.
type Client struct {
	// URL is the directory, e.g. https://plc.directory.
	URL string
	// HTTP makes the requests (the guarded client).
	HTTP *http.Client
}

// Error is a directory's refusal: its status and message.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("plc directory answered %d: %s", e.Status, e.Message)
}

// ErrNotFound is returned when the directory does not know a DID.
var ErrNotFound = errors.New("DID not found in the PLC directory")

// State returns a DID's current state (GET /{did}/data).
func (c *Client) State(ctx context.Context, did string) (State, error) {
	var s State
	err := c.get(ctx, did+"/data", &s)
	if err == nil {
		s.DID = did
	}
	return s, err
}

// auditEntry is an entry of GET /{did}/log/audit.
type auditEntry struct {
	CID       string `json:"cid"`
	Nullified bool   `json:"nullified"`
}

// Head returns the CID of a DID's latest valid operation, which the next
// operation names as prev.
func (c *Client) Head(ctx context.Context, did string) (string, error) {
	var log []auditEntry
	if err := c.get(ctx, did+"/log/audit", &log); err != nil {
		return "", err
	}
	for i := len(log) - 1; i >= 0; i-- {
		if !log[i].Nullified && log[i].CID != "" {
			return log[i].CID, nil
		}
	}
	return "", fmt.Errorf("plc directory: %s has no operation", did)
}

// Submit posts a signed operation for did (POST /{did}).
func (c *Client) Submit(ctx context.Context, did string, op *Operation) error {
	if op.Sig == "" {
		return errors.New("plc: submit an unsigned operation")
	}
	body, err := json.Marshal(op)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint(did), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, nil)
}

func (c *Client) endpoint(path string) string {
	return strings.TrimSuffix(c.URL, "/") + "/" + path
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint(path), nil)
	if err != nil {
		return err
	}
	return c.do(req, out)
}

// do runs req and decodes a 2xx answer into out (when not nil); a
// refusal becomes an *Error with the directory's message, a 404 on a
// read ErrNotFound.
func (c *Client) do(req *http.Request, out any) error {
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("plc directory: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("plc directory: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound && req.Method == http.MethodGet {
		return ErrNotFound
	}
	if resp.StatusCode/100 != 2 {
		return &Error{Status: resp.StatusCode, Message: refusal(body)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("plc directory: malformed answer: %w", err)
	}
	return nil
}

// refusal is the message of a directory's error answer: its JSON
// "message" (or "error"), else its text, shortened.
func refusal(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		if e.Message != "" {
			return e.Message
		}
		if e.Error != "" {
			return e.Error
		}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if msg == "" {
		msg = "no message"
	}
	return msg
}
