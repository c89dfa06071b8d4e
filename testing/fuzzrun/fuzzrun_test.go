// Package fuzzrun tests scripts/fuzz.sh, make fuzz's runner, with a fake
// go command: every target runs even when one fails, a fuzz coordinator
// timeout is retried once and said, and the exit status and the last
// line name the failures.
package fuzzrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo answers go test -fuzz '^TARGET$' as FAKE_<TARGET> says: "pass",
// "fail" (a failing input, as Go reports one), "none" (no such target,
// which go test passes), "timeout" (the
// coordinator's deadline, every time) or "timeout-once". It logs each
// call's target to FAKE_LOG.
const fakeGo = `#!/usr/bin/env bash
set -u
while [ $# -gt 0 ] && [ "$1" != -fuzz ]; do shift; done
target=${2#^}; target=${target%$}
echo "$target" >>"$FAKE_LOG"
var=FAKE_$target
case ${!var:-pass} in
pass) echo "fuzz: elapsed: 1s, execs: 100"; echo PASS; echo "ok  	fake	1.0s" ;;
fail) echo "--- FAIL: $target (0.10s)"; echo "    Failing input written to testdata/fuzz/$target/abc"; echo FAIL; exit 1 ;;
none) echo "testing: warning: no fuzz tests to fuzz"; echo PASS; echo "ok  	fake	0.1s" ;;
timeout) echo "fuzz: elapsed: 30s"; echo "FAIL: context deadline exceeded"; exit 1 ;;
timeout-once)
	if grep -q "^$target.retry" "$FAKE_LOG"; then echo PASS; exit 0; fi
	echo "$target.retry" >>"$FAKE_LOG"
	echo "FAIL: context deadline exceeded"; exit 1 ;;
esac
`

type run struct {
	out   string
	code  int
	calls []string // the targets go was called for, in order
}

func fuzz(t *testing.T, env map[string]string, args ...string) run {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("scripts/fuzz.sh needs bash: %v", err)
	}
	dir := t.TempDir()
	goCmd := filepath.Join(dir, "go")
	if err := os.WriteFile(goCmd, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "calls")
	cmd := exec.Command("bash", append([]string{"../../scripts/fuzz.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "GO="+goCmd, "FAKE_LOG="+logFile)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var calls []string
	if b, err := os.ReadFile(logFile); err == nil {
		for _, l := range strings.Fields(string(b)) {
			if !strings.HasSuffix(l, ".retry") {
				calls = append(calls, l)
			}
		}
	}
	return run{string(out), code, calls}
}

var targets = []string{"FuzzA:./a/", "FuzzB:./b/", "FuzzC:./c/"}

func check(t *testing.T, r run, code int, calls string, lines ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status %d, want %d", r.code, code)
	}
	if got := strings.Join(r.calls, " "); got != calls {
		t.Errorf("go test -fuzz ran for %q, want %q", got, calls)
	}
	for _, l := range lines {
		if !strings.Contains(r.out, l) {
			t.Errorf("output lacks %q", l)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", r.out)
	}
}

func TestEveryTargetPasses(t *testing.T) {
	r := fuzz(t, nil, append([]string{"1s"}, targets...)...)
	check(t, r, 0, "FuzzA FuzzB FuzzC", "PASS  FuzzA (./a/)", "PASS  FuzzC (./c/)", "fuzz: 3 targets, all passed")
}

// The first target's failure stops nothing: the others run, and the end
// names the failure.
func TestAFailingTargetDoesNotStopTheOthers(t *testing.T) {
	r := fuzz(t, map[string]string{"FAKE_FuzzA": "fail", "FAKE_FuzzC": "fail"}, append([]string{"1s"}, targets...)...)
	check(t, r, 1, "FuzzA FuzzB FuzzC", "FAIL  FuzzA (./a/)", "PASS  FuzzB (./b/)", "FAIL  FuzzC (./c/)",
		"fuzz: FAILED: FuzzA (./a/) FuzzC (./c/)")
}

// A coordinator timeout is run again once: a pass then is a pass that
// says so; a second timeout is a failure. A real failing input is not
// retried.
func TestCoordinatorTimeoutIsRetriedOnce(t *testing.T) {
	r := fuzz(t, map[string]string{"FAKE_FuzzA": "timeout-once", "FAKE_FuzzB": "timeout"}, append([]string{"1s"}, targets...)...)
	check(t, r, 1, "FuzzA FuzzA FuzzB FuzzB FuzzC",
		"PASS  FuzzA (./a/), after a retry: the fuzz coordinator timed out (context deadline exceeded)",
		"FAIL  FuzzB (./b/): the fuzz coordinator timed out (context deadline exceeded)",
		"fuzz: FAILED: FuzzB (./b/)")

	r = fuzz(t, map[string]string{"FAKE_FuzzA": "fail"}, "1s", "FuzzA:./a/")
	check(t, r, 1, "FuzzA", "FAIL  FuzzA (./a/)\n")
}

// A target its package does not have fails: go test -fuzz with a pattern
// that matches nothing passes, and a renamed target would drop out.
func TestMissingTargetFails(t *testing.T) {
	r := fuzz(t, map[string]string{"FAKE_FuzzB": "none"}, append([]string{"1s"}, targets...)...)
	check(t, r, 1, "FuzzA FuzzB FuzzC", "FAIL  FuzzB (./b/): no fuzz test FuzzB in ./b/", "fuzz: FAILED: FuzzB (./b/)")
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"1s"}, {"1s", "FuzzA"}, {"1s", ":./a/"}} {
		if r := fuzz(t, nil, args...); r.code != 2 || len(r.calls) != 0 {
			t.Errorf("fuzz.sh %q: exit status %d after %d runs, want 2 and none\n%s", args, r.code, len(r.calls), r.out)
		}
	}
}

// The Makefile's targets exist: each FUZZ_TARGETS entry names a fuzz
// function in its package, so a renamed target cannot drop out of make
// fuzz unnoticed (go test -fuzz matching nothing passes).
func TestMakefileTargetsExist(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(mk)
	i := strings.Index(s, "FUZZ_TARGETS ?=")
	if i < 0 {
		t.Fatal("the Makefile has no FUZZ_TARGETS")
	}
	line := s[i+len("FUZZ_TARGETS ?="):]
	var specs []string
	for {
		nl := strings.IndexByte(line, '\n')
		cur := line[:nl]
		cont := strings.HasSuffix(strings.TrimSpace(cur), "\\")
		specs = append(specs, strings.Fields(strings.TrimSuffix(strings.TrimSpace(cur), "\\"))...)
		line = line[nl+1:]
		if !cont {
			break
		}
	}
	if len(specs) < 4 {
		t.Fatalf("FUZZ_TARGETS lists %d targets, want at least 4: %q", len(specs), specs)
	}
	for _, spec := range specs {
		target, pkg, _ := strings.Cut(spec, ":")
		files, _ := filepath.Glob(filepath.Join("../..", pkg, "*_test.go"))
		found := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "func "+target+"(f *testing.F)") {
				found = true
			}
		}
		if !found {
			t.Errorf("FUZZ_TARGETS: %s: no func %s(f *testing.F) in %s", spec, target, pkg)
		}
	}
}
