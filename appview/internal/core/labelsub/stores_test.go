package labelsub_test

import (
	"os"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// forEachStore runs fn on SQLite and PostgreSQL.
func forEachStore(t *testing.T, fn func(t *testing.T, open func(testing.TB) storage.LabelStore)) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		fn(t, func(t testing.TB) storage.LabelStore { return open(t) })
	})
}

// benchStore is a store the benchmark runs on.
type benchStore struct {
	name string
	open func(testing.TB) storage.LabelStore
}

// benchStores is SQLite, and PostgreSQL when APPVIEW_TEST_POSTGRES_URL is
// set.
func benchStores() []benchStore {
	out := []benchStore{{"sqlite", func(t testing.TB) storage.LabelStore { return storagetest.SQLite(t) }}}
	if os.Getenv(storagetest.PostgresURLEnv) != "" {
		out = append(out, benchStore{"postgres", func(t testing.TB) storage.LabelStore { return storagetest.Postgres(t) }})
	}
	return out
}
