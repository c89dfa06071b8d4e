package main

import (
	"runtime"
	"slices"
	"time"
)

// measurement is the cost of one call, from timed calls.
type measurement struct {
	ms     float64 // median wall time in milliseconds
	runs   int     // calls timed
	allocs float64 // heap allocations per call (runtime.MemStats.Mallocs)
	bytes  float64 // heap bytes allocated per call (runtime.MemStats.TotalAlloc)
}

// maxRuns bounds the calls measure times.
const maxRuns = 10000

// measure times run: at least minRuns calls, and more while the calls so
// far took less than budget in all, up to maxRuns. It collects garbage
// first, and reads the memory statistics before the first call and after
// the last, so that allocations are counted over exactly the timed calls
// (the loop itself allocates nothing; whatever else in the process
// allocates meanwhile is counted too). It stops at the first error.
func measure(run func() error, minRuns int, budget time.Duration) (measurement, error) {
	times := make([]float64, 0, max(minRuns, maxRuns))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for len(times) < minRuns || (time.Since(start) < budget && len(times) < maxRuns) {
		t0 := time.Now()
		if err := run(); err != nil {
			return measurement{}, err
		}
		times = append(times, float64(time.Since(t0).Nanoseconds())/1e6)
	}
	runtime.ReadMemStats(&after)
	n := float64(len(times))
	slices.Sort(times)
	return measurement{
		ms:     times[len(times)/2],
		runs:   len(times),
		allocs: float64(after.Mallocs-before.Mallocs) / n,
		bytes:  float64(after.TotalAlloc-before.TotalAlloc) / n,
	}, nil
}

// median returns the median of xs (the mean of the middle two for an even
// count), which is not empty; xs is left as it was.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
