package hostile_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
)

// limits bound one case.
type limits struct {
	budget   int64         // the run's memory budget (inference.WithMemoryBudget)
	deadline time.Duration // the context deadline of the load and the run
	heap     int64         // how much the heap may grow over its baseline while the case runs
}

// std are the limits of most cases. The heap bound is 4× the budget: the
// budget's live intermediates, as much garbage again before the collector
// runs (GOGC=100), and the model and its feeds; every bomb here asks for
// at least 8× the bound.
var std = limits{budget: 64 << 20, deadline: 10 * time.Second, heap: 256 << 20}

const (
	// hangGrace is how long after its deadline a case may take to return
	// before it counts as a hang.
	hangGrace = 5 * time.Second
	// runaway is the heap growth at which a case's process stops at once,
	// before it takes the machine's memory: a bomb that got through
	// allocates gigabytes in milliseconds.
	runaway = 1 << 30
	// inProcess, set to 1 in the environment, runs the cases in the test
	// process; isolate sets it for the process it starts for a case.
	inProcess = "HOSTILE_IN_PROCESS"
	// processTimeout bounds a case's process, hang guard included.
	processTimeout = 3 * time.Minute
)

// isolate runs body as the subtest name of t in a process of its own: the
// test binary, run for that one subtest with inProcess set. A case that
// crashes the process, hangs or allocates without bound fails alone, with
// what its process printed.
func isolate(t *testing.T, name string, body func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if os.Getenv(inProcess) == "1" {
			body(t)
			return
		}
		parts := strings.Split(t.Name(), "/")
		for i, p := range parts {
			parts[i] = "^" + regexp.QuoteMeta(p) + "$"
		}
		ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), inProcess+"=1")
		out, err := cmd.CombinedOutput()
		passed := err == nil && bytes.Contains(out, []byte("--- PASS: "+t.Name()+" "))
		if err == nil && !passed {
			err = fmt.Errorf("the case did not run")
		}
		switch {
		case testing.Verbose():
			t.Logf("its process printed:\n%s", out)
			if !passed {
				t.Errorf("case failed in its own process (%v)", err)
			}
		case !passed:
			t.Errorf("case failed in its own process (%v):\n%s", err, summary(out))
		}
	})
}

// summary is what a case's process printed, shortened to what says what
// went wrong when it crashed: the test's lines, the crash's message and the
// first frames of this module's code, which are the crashing goroutine's
// (the runtime prints it first).
func summary(out []byte) string {
	const short, frames = 40, 8
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) <= short {
		return string(out)
	}
	var keep []string
	kept := 0
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "=== "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "    "),
			strings.HasPrefix(l, "fatal error:"), strings.HasPrefix(l, "panic:"):
			keep = append(keep, l)
		case strings.Contains(l, "github.com/beamml/beamml/") && !strings.HasPrefix(l, "created by") && kept < frames && i+1 < len(lines):
			keep = append(keep, "  "+l, "  "+frameNoise.ReplaceAllString(lines[i+1], ""))
			kept++
		}
	}
	return strings.Join(keep, "\n") + fmt.Sprintf("\n(%d lines in all; go test -v shows them)\n", len(lines))
}

var frameNoise = regexp.MustCompile(` fp=0x[0-9a-f]+ sp=0x[0-9a-f]+ pc=0x[0-9a-f]+$`)

// bounded runs f, a case's load and run, under lim: in a goroutine, with
// a context that carries lim's memory budget and deadline, while a sampler
// reads the heap every millisecond. It fails t if f panics, if f has not
// returned hangGrace after the deadline (a hang), or if the heap grew over
// its baseline by more than lim.heap; it returns what f returned.
func bounded[T any](t *testing.T, lim limits, f func(ctx context.Context) (T, error)) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(inference.WithMemoryBudget(context.Background(), lim.budget), lim.deadline)
	defer cancel()

	runtime.GC()
	base := newHeapMeter().bytes()
	var peak atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		heap := newHeapMeter()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			grown := heap.bytes() - base
			if grown > peak.Load() {
				peak.Store(grown)
			}
			if grown > max(runaway, 2*lim.heap) {
				fmt.Printf("--- FAIL: %s: the heap grew by %s, over the bound of %s; process stopped\n",
					t.Name(), inference.FormatBytes(grown), inference.FormatBytes(lim.heap))
				os.Exit(3)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	type result struct {
		v     T
		err   error
		panic any
		stack []byte
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				buf := make([]byte, 8<<10)
				done <- result{panic: p, stack: buf[:runtime.Stack(buf, false)]}
			}
		}()
		v, err := f(ctx)
		done <- result{v: v, err: err}
	}()

	var r result
	select {
	case r = <-done:
	case <-time.After(lim.deadline + hangGrace):
		t.Fatalf("hang: no result %v after the context's deadline of %v (the heap grew by %s meanwhile; bound %s)",
			hangGrace, lim.deadline, inference.FormatBytes(peak.Load()), inference.FormatBytes(lim.heap))
	}
	grown := max(peak.Load(), newHeapMeter().bytes()-base)
	if grown > lim.heap {
		t.Errorf("the heap grew by %s, over the bound of %s", inference.FormatBytes(grown), inference.FormatBytes(lim.heap))
	}
	t.Logf("the heap grew by %s (bound %s); error: %v", inference.FormatBytes(grown), inference.FormatBytes(lim.heap), r.err)
	if r.panic != nil {
		t.Fatalf("panic escaped: %v\n%s", r.panic, r.stack)
	}
	return r.v, r.err
}

// heapMeter reads the memory that heap objects occupy, live or not yet
// collected. Each goroutine uses its own.
type heapMeter []metrics.Sample

func newHeapMeter() heapMeter {
	return heapMeter{{Name: "/memory/classes/heap/objects:bytes"}}
}

func (m heapMeter) bytes() int64 {
	metrics.Read(m)
	return int64(m[0].Value.Uint64())
}
