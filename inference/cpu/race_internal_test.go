//go:build race

package cpu

// raceEnabled is whether the race detector is on: its sync.Pool drops
// items at random, so allocation counts say nothing then.
const raceEnabled = true
