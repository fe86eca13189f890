package postgres_test

import (
	"fmt"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func openBench(t testing.TB) storage.Store { return storagetest.Postgres(t) }

func BenchmarkWriteBatch(b *testing.B) { storagetest.BenchWriteBatch(b, openBench) }

func BenchmarkWriteLinks(b *testing.B) { storagetest.BenchWriteLinks(b, openBench) }

func BenchmarkList(b *testing.B) { storagetest.BenchList(b, "postgres", openBench) }

func BenchmarkQuery(b *testing.B) { storagetest.BenchQuery(b, "postgres", openBench) }

func BenchmarkApplyLabels(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("perEvent=%d", n), func(b *testing.B) { storagetest.BenchApplyLabels(b, n, openBench) })
	}
}

func BenchmarkFieldIndex(b *testing.B) { storagetest.BenchFieldIndex(b, openBench) }

func BenchmarkSearch(b *testing.B) { storagetest.BenchSearch(b, openBench) }
