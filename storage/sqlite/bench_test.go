package sqlite_test

import (
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func openBench(t testing.TB) storage.Store { return storagetest.SQLite(t) }

func BenchmarkWriteBatch(b *testing.B) { storagetest.BenchWriteBatch(b, openBench) }

func BenchmarkList(b *testing.B) { storagetest.BenchList(b, "sqlite", openBench) }

func BenchmarkQuery(b *testing.B) { storagetest.BenchQuery(b, "sqlite", openBench) }
