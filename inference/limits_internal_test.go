package inference

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1073741824": 1 << 30, "1GiB": 1 << 30, "512MB": 512e6, "64 MiB": 64 << 20, "3KB": 3000, "7B": 7} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-5", "1.5GiB", "GiB", "5XB", "9999999TiB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) did not fail", bad)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 4 << 40: "4.0 TiB", 1 << 62: "4.0 EiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMemoryBudget(t *testing.T) {
	if MemoryLimit() <= 0 {
		t.Fatal("no memory limit")
	}
	def := DefaultMemoryBudget()
	if def < MinMemoryBudget || def > MemoryLimit() {
		t.Fatalf("default budget %d outside [%d, %d]", def, MinMemoryBudget, MemoryLimit())
	}
	if got := MemoryBudget(context.Background()); got != def {
		t.Errorf("a context without a budget has %d, want the default %d", got, def)
	}
	if got := MemoryBudget(WithMemoryBudget(context.Background(), 12345)); got != 12345 {
		t.Errorf("got %d, want 12345", got)
	}
	// The runtime's soft limit (GOMEMLIMIT) lowers it.
	old := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(old)
	if MemoryLimit() > 1<<30 {
		t.Errorf("memory limit %d above GOMEMLIMIT", MemoryLimit())
	}
	if want := max(int64(1<<30)/4*3/int64(runtime.GOMAXPROCS(0)), MinMemoryBudget); DefaultMemoryBudget() != want {
		t.Errorf("default budget %d, want %d", DefaultMemoryBudget(), want)
	}
}

func TestRecovered(t *testing.T) {
	var err error
	func() {
		defer func() { err = Recovered("test", recover()) }()
		var m map[string]int
		m["x"]++ // assignment to a nil map
	}()
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPanic) {
		t.Fatalf("got %v", err)
	}
	if len(pe.Frames) == 0 || !strings.Contains(pe.Frames[0], "TestRecovered") {
		t.Errorf("frames %q do not start at the panic", pe.Frames)
	}
	if !strings.Contains(err.Error(), "nil map") || !strings.Contains(err.Error(), "panic in test") {
		t.Errorf("message %q", err)
	}
}

func TestResourceErrorMessage(t *testing.T) {
	e := &ResourceError{Model: "m", Node: `"n" (Expand)`, What: "float32[1000000 1000000]", Bytes: 4e12, Budget: 64 << 20, InUse: 1 << 20}
	want := `inference: model "m": node "n" (Expand): float32[1000000 1000000] needs 3.6 TiB, over the memory budget of 64.0 MiB (1.0 MiB in use)`
	if e.Error() != want {
		t.Errorf("got  %s\nwant %s", e, want)
	}
	e.Bytes = -1
	if !strings.Contains(e.Error(), "more than 8 EiB") {
		t.Errorf("overflow: %s", e)
	}
}
