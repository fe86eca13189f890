package postgres_test

import (
	"testing"

	"github.com/lexview/lexview/storage/storagetest"
)

func BenchmarkWriteConcurrent(b *testing.B) { storagetest.BenchWriteConcurrent(b, openBench) }

func BenchmarkRecordVersions(b *testing.B) { storagetest.BenchRecordVersions(b, openBench) }
