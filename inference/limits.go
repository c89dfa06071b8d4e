package inference

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// The limits of one run. A model's run allocates its intermediates under a
// memory budget: every tensor a kernel allocates (outputs, scratch, index
// tables) is sized with overflow checks and counted against the bytes the
// run holds live, and a request over the budget fails that node with a
// *ResourceError (errors.Is(err, ErrResourceExhausted)) before anything is
// allocated. A run's deadline is its context's.

// ErrResourceExhausted: a run, or a load, asked for more memory than its
// budget allows. The error (a *ResourceError) names the node, the shape and
// the bytes. RunInference answers it like any failed batch: it splits the
// batch, and an element that fails alone goes to the failures output.
var ErrResourceExhausted = errors.New("inference: resource exhausted")

// ResourceError is a refused allocation.
type ResourceError struct {
	Model  string // the model (graph) name, where known
	Node   string // the node, as `"name" (Op)`, where known
	What   string // what was being allocated: "float32[1000000 1000000]", "folded constants"
	Bytes  int64  // the bytes asked for; -1 when the size overflows int64
	Budget int64  // the budget it was checked against
	InUse  int64  // the bytes the run held already
}

func (e *ResourceError) Error() string {
	var b strings.Builder
	b.WriteString("inference: ")
	if e.Model != "" {
		fmt.Fprintf(&b, "model %q: ", e.Model)
	}
	if e.Node != "" {
		fmt.Fprintf(&b, "node %s: ", e.Node)
	}
	size := "more than 8 EiB"
	if e.Bytes >= 0 {
		size = FormatBytes(e.Bytes)
	}
	fmt.Fprintf(&b, "%s needs %s, over the memory budget of %s", e.What, size, FormatBytes(e.Budget))
	if e.InUse > 0 {
		fmt.Fprintf(&b, " (%s in use)", FormatBytes(e.InUse))
	}
	return b.String()
}

func (e *ResourceError) Unwrap() error { return ErrResourceExhausted }

type budgetKey struct{}

// WithMemoryBudget returns a context under which a model's Run holds at
// most bytes of intermediates live at once. bytes ≤ 0 means the default,
// DefaultMemoryBudget.
func WithMemoryBudget(ctx context.Context, bytes int64) context.Context {
	return context.WithValue(ctx, budgetKey{}, bytes)
}

// MemoryBudget returns the memory budget of a run under ctx: the one set
// by WithMemoryBudget, else DefaultMemoryBudget.
func MemoryBudget(ctx context.Context) int64 {
	if b, ok := ctx.Value(budgetKey{}).(int64); ok && b > 0 {
		return b
	}
	return DefaultMemoryBudget()
}

// MinMemoryBudget is the smallest default budget: below it, a machine's
// memory limit is ignored.
const MinMemoryBudget = 64 << 20

// DefaultMemoryBudget is the budget of a run that sets none: three quarters
// of the memory the process may use (MemoryLimit), shared by as many
// concurrent runs as the process has threads (GOMAXPROCS, the bundles a
// Beam worker runs at once), and at least MinMemoryBudget. On a 4-vCPU,
// 15 GB Dataflow worker that is 2.8 GB per run.
func DefaultMemoryBudget() int64 {
	return max(MemoryLimit()/4*3/int64(runtime.GOMAXPROCS(0)), MinMemoryBudget)
}

// MemoryLimit is the memory this process may use: the smallest of the Go
// runtime's soft limit (GOMEMLIMIT, debug.SetMemoryLimit), the cgroup's
// limit (memory.max under cgroup v2, memory.limit_in_bytes under v1) and
// the machine's physical memory. It is read once per process, except the
// runtime's limit, which is read on every call.
func MemoryLimit() int64 {
	limit := systemMemory()
	if soft := debug.SetMemoryLimit(-1); soft > 0 && soft < limit {
		limit = soft
	}
	return limit
}

var systemMemory = sync.OnceValue(func() int64 {
	limit := int64(1) << 62
	if phys := meminfoTotal(); phys > 0 {
		limit = phys
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(path); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && v < limit {
				limit = v // "max", and v1's huge "unlimited" value, leave it
			}
		}
	}
	return limit
})

// meminfoTotal reads MemTotal from /proc/meminfo, 0 where there is none.
func meminfoTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// ParseBytes reads a size as the memory_budget option and RunInference's
// flags write it: a whole number of bytes, optionally with a unit
// KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000):
// "1073741824", "1GiB", "512MB".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		scale  int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	scale := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, scale = strings.TrimSpace(rest), u.scale
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/scale {
		return 0, fmt.Errorf("inference: size %q: want a positive number of bytes, as 1073741824, 1GiB or 512MB", s)
	}
	return v * scale, nil
}

// FormatBytes writes a size for people: "512 B", "1.5 KiB", "4.0 TiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ErrPanic: code running a model panicked: a kernel, a backend, or a
// user's Model. The panic was recovered and became this error (a
// *PanicError), so it fails one run and not the process.
var ErrPanic = errors.New("inference: panic")

// PanicError is a recovered panic: its value and the innermost frames of
// the goroutine that panicked, outside the runtime.
type PanicError struct {
	Where  string // what was running: `node "conv1" (Conv)`, "Model.Run"
	Value  any
	Frames []string // "package.Function (file.go:123)", innermost first
}

// MaxPanicFrames is how many frames a PanicError keeps.
const MaxPanicFrames = 8

// Recovered wraps the value a deferred recover() returned, called in that
// deferred function (it reads the panicking goroutine's stack).
func Recovered(where string, v any) *PanicError {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	var all []runtime.Frame
	frames := runtime.CallersFrames(pcs[:n])
	for more := n > 0; more; {
		var f runtime.Frame
		f, more = frames.Next()
		if f.Function == "runtime.gopanic" {
			all = all[:0] // the frames above are the deferred function's
			continue
		}
		all = append(all, f)
	}
	e := &PanicError{Where: where, Value: v}
	for _, f := range all {
		if strings.HasPrefix(f.Function, "runtime.") || f.Function == "" {
			continue
		}
		if len(e.Frames) == MaxPanicFrames {
			break
		}
		e.Frames = append(e.Frames, fmt.Sprintf("%s (%s:%d)", f.Function, shortFile(f.File), f.Line))
	}
	return e
}

func shortFile(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		if j := strings.LastIndexByte(path[:i], '/'); j >= 0 {
			return path[j+1:]
		}
	}
	return path
}

func (e *PanicError) Error() string {
	msg := fmt.Sprintf("inference: panic in %s: %v", e.Where, e.Value)
	if len(e.Frames) > 0 {
		msg += " [at " + strings.Join(e.Frames, "; ") + "]"
	}
	return msg
}

func (e *PanicError) Unwrap() error { return ErrPanic }
