package appview

import (
	"context"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/storage"
)

// bulkWriter adapts the batch writer to what backfill needs.
type bulkWriter struct{ w *indexer.Writer }

func (b bulkWriter) WriteBulk(ctx context.Context, source string, changes []storage.Change) error {
	_, err := b.w.WriteBulk(ctx, source, changes)
	return err
}

// backfillAudit adapts the event log to what backfill needs.
type backfillAudit struct{ log *eventlog.Log }

func (a backfillAudit) Record(ctx context.Context, e backfill.AuditEntry) {
	a.log.Record(ctx, eventlog.Entry{Type: e.Type, Severity: e.Severity, ActorDID: e.ActorDID, Subject: e.Subject, Detail: e.Detail})
}
