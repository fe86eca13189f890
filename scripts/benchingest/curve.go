package main

import "time"

// curvePoint is the committed rate over one stretch of a phase: events
// from..to (counted from the phase's start) were committed at rate
// events/s.
type curvePoint struct {
	from, to int
	rate     float64
}

// curve records when the committed count crosses each multiple of step
// (and the total), to report how the writer's rate changes as the
// database grows.
type curve struct {
	step, total int
	prevDone    float64   // the previous reading
	prevAt      time.Time //
	lastTo      int       // the last crossing
	lastAt      time.Time //
	points      []curvePoint
}

// newCurve starts a curve at start, with nothing committed; a step <= 0
// records nothing.
func newCurve(step, total int, start time.Time) *curve {
	return &curve{step: step, total: total, prevAt: start, lastAt: start}
}

// observe takes a reading: done events committed at at. A crossing between
// two readings is placed by linear interpolation.
func (c *curve) observe(done float64, at time.Time) {
	if c.step <= 0 || done < c.prevDone {
		return
	}
	for c.lastTo < c.total {
		to := min(c.lastTo+c.step, c.total)
		if done < float64(to) {
			break
		}
		frac := (float64(to) - c.prevDone) / (done - c.prevDone)
		crossed := c.prevAt.Add(time.Duration(frac * float64(at.Sub(c.prevAt))))
		c.points = append(c.points, curvePoint{from: c.lastTo, to: to, rate: float64(to-c.lastTo) / crossed.Sub(c.lastAt).Seconds()})
		c.lastTo, c.lastAt = to, crossed
	}
	c.prevDone, c.prevAt = done, at
}
