package history

import (
	"math"
	"strconv"
	"time"
)

// key names one series: a metric and a label (a source, a method, an
// event type...).
type key struct{ metric, label string }

// series is one series' values in its tier's ring, aligned with the
// tier's times.
type series struct {
	values []float64 // NaN: no value at that point
	last   int64     // the number of the last point that held a value
}

// tier is one resolution of the history: a point every `every` samples,
// the last size of them kept in rings (fixed-size: a new point takes the
// place of the oldest once the ring is full).
type tier struct {
	name   string
	every  int // samples per point
	size   int // points kept
	times  []time.Time
	head   int   // where the next point goes
	n      int   // points held, at most size
	points int64 // points added since start
	series map[key]*series

	// base is the reading the next point's rates are measured from (nil
	// before the first point), taken at baseAt.
	base   *Reading
	baseAt time.Time
	// peaks are the gauges' highest values since the last point.
	peaks map[key]float64
	count int // samples since the last point
}

func newTier(name string, every, size int) *tier {
	return &tier{name: name, every: every, size: size, times: make([]time.Time, size),
		series: map[key]*series{}, peaks: map[key]float64{}}
}

// add appends the point vals taken at at: every series held gets its
// value (NaN when vals has none). A series is created at its first value
// and dropped once no point of the ring holds one, so that the names of
// sources, methods or event types gone do not pile up.
func (t *tier) add(at time.Time, vals map[key]float64) {
	i := t.head
	t.times[i] = at
	for k, v := range vals {
		if _, ok := t.series[k]; !ok && !math.IsNaN(v) {
			t.series[k] = &series{values: nans(t.size)}
		}
	}
	for k, s := range t.series {
		v, ok := vals[k]
		if !ok || math.IsNaN(v) {
			s.values[i] = math.NaN()
			if t.points-s.last >= int64(t.size) {
				delete(t.series, k)
			}
			continue
		}
		s.values[i] = v
		s.last = t.points
	}
	t.head = (i + 1) % t.size
	t.n = min(t.n+1, t.size)
	t.points++
}

// ordered returns ring's values in time order, oldest first.
func (t *tier) ordered(ring []float64) []Value {
	out := make([]Value, t.n)
	start := (t.head - t.n + t.size) % t.size
	for j := range t.n {
		out[j] = Value(ring[(start+j)%t.size])
	}
	return out
}

// timeline returns the points' times in Unix milliseconds, oldest first.
func (t *tier) timeline() []int64 {
	out := make([]int64, t.n)
	start := (t.head - t.n + t.size) % t.size
	for j := range t.n {
		out[j] = t.times[(start+j)%t.size].UnixMilli()
	}
	return out
}

// held reports whether the series k holds a value above zero in the ring.
func (t *tier) held(k key) bool {
	s, ok := t.series[k]
	if !ok {
		return false
	}
	for _, v := range s.values {
		if v > 0 {
			return true
		}
	}
	return false
}

func nans(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// Value is a number of the history; NaN (no value) is encoded as null,
// others with at most three decimals.
type Value float64

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, math.Round(f*1000)/1000, 'f', -1, 64), nil
}
