package history

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Saved is the day window's points as the instance stores them, so that
// its chart does not start empty at each start (the hour window, which a
// restart empties within the hour anyway, is not saved). Options.Save is
// given one at each new point of the day window; Restore puts one back.
type Saved struct {
	// Times are the points' times in Unix milliseconds, oldest first.
	Times []int64 `json:"times"`
	// Series holds each metric's series by label, a value per time (null
	// where it had none).
	Series map[string]map[string][]Value `json:"series"`
}

// saved returns tier t's points. The caller holds h.mu.
func (h *History) saved(t *tier) Saved {
	s := Saved{Times: t.timeline(), Series: map[string]map[string][]Value{}}
	for k, ser := range t.series {
		if s.Series[k.metric] == nil {
			s.Series[k.metric] = map[string][]Value{}
		}
		s.Series[k.metric][k.label] = t.ordered(ser.values)
	}
	return s
}

// Restore puts the points of s that fall within the last day (the day
// window's span, before now) back into the day window. It does nothing
// once the window holds points: call it before the first sample.
func (h *History) Restore(s Saved) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tiers[slices.IndexFunc(h.tiers, func(t *tier) bool { return t.name == Day })]
	if t.n > 0 {
		return
	}
	now := h.now()
	from := now.Add(-time.Duration(t.every*t.size) * h.interval)
	for i, ms := range s.Times {
		at := time.UnixMilli(ms)
		if !at.After(from) || at.After(now) || (i > 0 && ms <= s.Times[i-1]) {
			continue
		}
		vals := map[key]float64{}
		for metric, labels := range s.Series {
			for label, vs := range labels {
				if i < len(vs) {
					vals[key{metric, label}] = float64(vs[i])
				}
			}
		}
		t.add(at, vals)
	}
}

// UnmarshalJSON implements json.Unmarshaler: null is NaN (no value).
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Value(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*v = Value(f)
	return nil
}
