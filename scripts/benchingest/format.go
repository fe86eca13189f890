package main

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
)

func pct(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }

func numCPU() int { return runtime.NumCPU() }

// thousands renders a rate with thousands separators: 12,345.
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// seconds renders a lag; beyond marks a value past the largest bucket.
func seconds(v float64, beyond bool) string {
	switch {
	case beyond:
		return fmt.Sprintf(">%gs", v)
	case math.IsNaN(v):
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fms", v*1000)
	}
	return fmt.Sprintf("%.2fs", v)
}

func mb(b int64) string { return fmt.Sprintf("%d MB", b>>20) }
