package indexer

import (
	"context"

	"github.com/lexview/lexview/storage"
)

// SubmitAccounts queues account states (storage.AccountState) behind
// every submission queued before them. A batch applies its account states
// after its record changes, so a change submitted earlier, in the same
// batch or an earlier one, never outlives an inactive state: the store
// removes the account's records after it, and skips the account's later
// writes. The returned channel is closed once the states are committed
// (or the writer gave up on them while stopping).
func (w *Writer) SubmitAccounts(ctx context.Context, source string, accounts []storage.AccountState) (<-chan struct{}, error) {
	if err := w.accepting(); err != nil {
		return nil, err
	}
	it := &item{source: source, accounts: accounts, done: make(chan struct{})}
	if err := w.enqueue(ctx, w.queue, it); err != nil {
		return nil, err
	}
	w.opt.Metrics.Queue(len(w.queue))
	return it.done, nil
}
