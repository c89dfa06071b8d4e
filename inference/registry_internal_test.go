package inference

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// Auto picks CUDA when its backend is there and answers, and otherwise
// the CPU with the reason; with BEAMML_REQUIRE_GPU=1 the fallback is an
// error naming the reason, but only where an NVIDIA driver is present.
func TestChooseAuto(t *testing.T) {
	down := errors.New("cu: cuInit: no CUDA-capable device is detected")
	for _, c := range []struct {
		name              string
		haveCUDA          bool
		avail             error
		require, driver   bool
		want              Device
		wantWhy, wantFail string
	}{
		{name: "gpu", haveCUDA: true, want: CUDA},
		{name: "gpu, required", haveCUDA: true, require: true, driver: true, want: CUDA},
		{name: "no cuda backend", want: CPU, wantWhy: "no CUDA backend"},
		{name: "no cuda backend, laptop, required", require: true, want: CPU, wantWhy: "no CUDA backend"},
		{name: "gpu down", haveCUDA: true, avail: down, driver: true, want: CPU, wantWhy: "no CUDA-capable device"},
		{name: "gpu down, required", haveCUDA: true, avail: down, require: true, driver: true, wantFail: "BEAMML_REQUIRE_GPU=1"},
		{name: "no cuda backend, driver, required", require: true, driver: true, wantFail: "no CUDA backend"},
	} {
		got, why, err := chooseAuto(c.haveCUDA, c.avail, c.require, c.driver)
		switch {
		case c.wantFail != "":
			if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), c.wantFail) {
				t.Errorf("%s: error %v, want ErrNoDevice saying %q", c.name, err, c.wantFail)
			}
		case err != nil || got != c.want || !strings.Contains(why, c.wantWhy):
			t.Errorf("%s: chose %q (%q), %v; want %q saying %q", c.name, got, why, err, c.want, c.wantWhy)
		}
	}
}

// Auto's one log line says what it chose, and on a fallback why, at the
// level an operator needs: a warning where a driver is present (a GPU
// worker running on the CPU), an error for a refusal.
func TestLogAuto(t *testing.T) {
	down := "cu: cuInit: no CUDA-capable device is detected"
	refusal := errors.New("inference: device auto: BEAMML_REQUIRE_GPU=1 and an NVIDIA driver is present, but the GPU cannot be used")
	for _, c := range []struct {
		name   string
		pick   Device
		why    string
		err    error
		driver bool
		want   []string
	}{
		{"gpu", CUDA, "", nil, true, []string{"level=INFO", "device auto chose cuda"}},
		{"laptop", CPU, "no CUDA backend", nil, false, []string{"level=INFO", "device auto chose the cpu", "why=", "no CUDA backend"}},
		{"fallback with a driver", CPU, down, nil, true, []string{"level=WARN", "fell back to the cpu", "no CUDA-capable device", "BEAMML_REQUIRE_GPU=1"}},
		{"refusal", "", down, refusal, true, []string{"level=ERROR", "BEAMML_REQUIRE_GPU=1", "cannot be used"}},
	} {
		var buf bytes.Buffer
		logAuto(slog.New(slog.NewTextHandler(&buf, nil)), c.pick, c.why, c.err, c.driver)
		line := buf.String()
		if strings.Count(line, "\n") != 1 {
			t.Errorf("%s: %d lines, want 1: %q", c.name, strings.Count(line, "\n"), line)
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: log line %q does not say %q", c.name, line, w)
			}
		}
	}
}
