package appview

import (
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/clientauth"
	"github.com/lexview/lexview/storage"
)

// The types below are the parts of Lexview's services that embedders
// program against; they are defined with the services, under internal/,
// and named here.

// NewClient describes an API client to create with App.Clients().Create.
type NewClient = apiclients.NewClient

// ClientManager creates, edits and deletes API clients; the admin API
// uses the same code.
type ClientManager = apiclients.Manager

// ClientPatch changes some of an API client's fields (ClientManager.Update);
// FullClientPatch makes one from an edited copy of a client.
type ClientPatch = apiclients.Patch

// ClientPatchField is a nullable field of a ClientPatch.
type ClientPatchField[T any] = apiclients.Field[T]

// FullClientPatch is a patch that sets every mutable field of c: Update
// with it saves an edited copy of a client.
func FullClientPatch(c storage.APIClient) ClientPatch { return apiclients.FullPatch(c) }

// ClientIdentifier identifies the API client of an XRPC request from its
// client key (Config.ClientIdentifier).
type ClientIdentifier = clientauth.Identifier

// ClientIdentifierFunc adapts a function to ClientIdentifier.
type ClientIdentifierFunc = clientauth.IdentifierFunc

// Client is an identified API client.
type Client = apiclients.Client

// ErrInvalidClient is returned by a ClientIdentifier for an unknown or
// inactive client key.
var ErrInvalidClient = apiclients.ErrInvalidClient

// RetryPolicy bounds the automatic retries of failed record-event scripts
// (Config.ScriptRetry).
type RetryPolicy = scripthost.RetryPolicy

// Writer is the batch writer (App.Writer): every record change goes
// through it, validated against its lexicon and run through record-event
// hooks, and is committed in batches.
type Writer = indexer.Writer

// WriteResult reports what the writer did with a submission's changes.
type WriteResult = indexer.Result

// ErrNotStarted is returned at once by the Writer before the App is
// started (Start, StartWriting, Serve or Run).
var ErrNotStarted = indexer.ErrNotStarted

// ErrStopped is returned by the Writer once the App's Shutdown has begun.
var ErrStopped = indexer.ErrStopped
