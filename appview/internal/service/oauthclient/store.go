package oauthclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// callbackStore is the indigo ClientAuthStore of one flow or one session:
// it serves the pending request the callback already took (taking it is
// what makes a state single use), and stores sessions sealed, with the
// flow's purpose and domain.
type callbackStore struct {
	client   *Client
	info     indigooauth.AuthRequestData // the taken request; empty when resuming a session
	purpose  string
	origin   string
	clientID string
}

var errNoRequest = errors.New("oauthclient: no such auth request")

// GetAuthRequestInfo returns the request the callback took.
func (s *callbackStore) GetAuthRequestInfo(_ context.Context, state string) (*indigooauth.AuthRequestData, error) {
	if s.info.State == "" || s.info.State != state {
		return nil, errNoRequest
	}
	info := s.info
	return &info, nil
}

// SaveAuthRequestInfo is not used: Authorize stores requests itself, with
// their purpose and domain.
func (s *callbackStore) SaveAuthRequestInfo(context.Context, indigooauth.AuthRequestData) error {
	return errors.New("oauthclient: requests are stored by Authorize")
}

// DeleteAuthRequestInfo does nothing: the callback took the request.
func (s *callbackStore) DeleteAuthRequestInfo(context.Context, string) error { return nil }

// GetSession opens a stored session.
func (s *callbackStore) GetSession(ctx context.Context, did syntax.DID, sessionID string) (*indigooauth.ClientSessionData, error) {
	row, err := s.client.opt.Store.GetOAuthClientSession(ctx, did.String(), sessionID)
	if err != nil {
		return nil, err
	}
	data, err := s.client.openSession(row)
	if err != nil {
		return nil, err
	}
	return &data, nil
}

// SaveSession seals and stores a session (an upsert: refreshed tokens
// replace the old ones).
func (s *callbackStore) SaveSession(ctx context.Context, sess indigooauth.ClientSessionData) error {
	raw, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	sealed, err := s.client.opt.Sealer.Seal(sessionSealPurpose(sess.AccountDID.String(), sess.SessionID), raw)
	clear(raw)
	if err != nil {
		return fmt.Errorf("oauthclient: seal session: %w", err)
	}
	now := s.client.opt.Now()
	return s.client.opt.Store.PutOAuthClientSession(ctx, storage.OAuthClientSession{
		DID: sess.AccountDID.String(), SessionID: sess.SessionID, Purpose: s.purpose, DomainOrigin: s.origin,
		ClientID: s.clientID, SealedData: sealed, CreatedAt: now, UpdatedAt: now,
	})
}

// DeleteSession removes a stored session.
func (s *callbackStore) DeleteSession(ctx context.Context, did syntax.DID, sessionID string) error {
	err := s.client.opt.Store.DeleteOAuthClientSession(ctx, did.String(), sessionID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
