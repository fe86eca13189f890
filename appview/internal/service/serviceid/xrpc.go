package serviceid

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
)

// maxPDSAnswer bounds what is read of a PDS's answer.
const maxPDSAnswer = 1 << 20

// xrpcError is a PDS's XRPC error answer.
type xrpcError struct {
	Status  int
	Code    string // the "error" field, e.g. ExpiredToken
	Message string
}

func (e *xrpcError) Error() string {
	msg := e.Code
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return fmt.Sprintf("%d %s", e.Status, msg)
}

// xrpc calls the procedure nsid (POST, with in as its JSON body, or none
// when in is nil) on the PDS at base with a bearer token (none when "").
// A 2xx answer is decoded into out when out is not nil.
func (s *Service) xrpc(ctx context.Context, base, nsid, bearer string, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/xrpc/"+nsid, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := s.opt.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPDSAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return &xrpcError{Status: resp.StatusCode, Code: e.Error, Message: e.Message}
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// pdsFailure classifies a failed call to the attached account's PDS: an
// error of this service passes as it is; a PDS's refusal (4xx) is a 400
// with what, its code and message; anything else (unreachable, a 5xx) an
// upstream failure.
func pdsFailure(what string, err error) error {
	var ferr *fail.Error
	if errors.As(err, &ferr) {
		return err
	}
	var xerr *xrpcError
	if errors.As(err, &xerr) && xerr.Status/100 == 4 {
		msg := xerr.Code
		if xerr.Message != "" {
			msg += ": " + xerr.Message
		}
		return fail.Wrap(fail.Invalid, what+": "+msg, err)
	}
	return fail.Wrap(fail.Upstream, what+": "+err.Error(), err)
}
