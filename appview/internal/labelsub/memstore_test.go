package labelsub_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// forEachStore runs fn on every store the subscriptions are tested on.
func forEachStore(t *testing.T, fn func(t *testing.T, open func(testing.TB) storage.LabelStore)) {
	t.Run("memory", func(t *testing.T) {
		fn(t, func(testing.TB) storage.LabelStore { return newMemStore() })
	})
}

// benchStore is a store the benchmark runs on.
type benchStore struct {
	name string
	open func(testing.TB) storage.LabelStore
}

func benchStores() []benchStore {
	return []benchStore{{"memory", func(testing.TB) storage.LabelStore { return newMemStore() }}}
}

// memStore is an in-memory storage.LabelStore following its contract.
type memStore struct {
	mu       sync.Mutex
	labelers map[string]*storage.Labeler
	order    []string
	labels   map[[3]string]storage.Label
}

func newMemStore() *memStore {
	return &memStore{labelers: map[string]*storage.Labeler{}, labels: map[[3]string]storage.Label{}}
}

func (s *memStore) PutLabeler(_ context.Context, did string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.labelers[did]; ok {
		l.Status, l.UpdatedAt = storage.LabelerActive, at
		return false, nil
	}
	s.labelers[did] = &storage.Labeler{DID: did, Status: storage.LabelerActive, CreatedAt: at, UpdatedAt: at}
	s.order = append(s.order, did)
	return true, nil
}

func (s *memStore) GetLabeler(_ context.Context, did string) (storage.Labeler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labelers[did]
	if !ok {
		return storage.Labeler{}, storage.ErrNotFound
	}
	return *l, nil
}

func (s *memStore) ListLabelers(context.Context) ([]storage.Labeler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.Labeler
	for _, did := range s.order {
		if l, ok := s.labelers[did]; ok {
			out = append(out, *l)
		}
	}
	return out, nil
}

func (s *memStore) SetLabelerStatus(_ context.Context, did, status string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labelers[did]
	if !ok {
		return storage.ErrNotFound
	}
	l.Status, l.UpdatedAt = status, at
	return nil
}

func (s *memStore) DeleteLabeler(_ context.Context, did string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.labelers[did]; !ok {
		return storage.ErrNotFound
	}
	delete(s.labelers, did)
	for k := range s.labels {
		if k[0] == did {
			delete(s.labels, k)
		}
	}
	return nil
}

func (s *memStore) ApplyLabels(_ context.Context, b storage.LabelBatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.labelers[b.Src]
	if !ok {
		return storage.ErrNotFound
	}
	for _, lab := range b.Labels {
		k := [3]string{lab.Src, lab.URI, lab.Val}
		if old, ok := s.labels[k]; ok && old.Cts.After(lab.Cts) {
			continue
		}
		s.labels[k] = lab
	}
	c := b.Cursor
	l.Cursor = &c
	return nil
}

func (s *memStore) LabelsFor(_ context.Context, subjects []string, now time.Time) (map[string][]storage.Label, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, sub := range subjects {
		want[sub] = true
	}
	out := map[string][]storage.Label{}
	for k, l := range s.labels {
		if want[k[1]] && l.AppliesAt(now) {
			out[k[1]] = append(out[k[1]], l)
		}
	}
	for _, ls := range out {
		sort.Slice(ls, func(i, j int) bool {
			if ls[i].Src != ls[j].Src {
				return ls[i].Src < ls[j].Src
			}
			return ls[i].Val < ls[j].Val
		})
	}
	return out, nil
}
