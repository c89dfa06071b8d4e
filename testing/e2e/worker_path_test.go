//go:build unix

package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the PROCESS environment's command (see the
// package doc): with bootEnv set it execs boot instead of running tests.
const (
	bootEnv        = "BEAMML_E2E_BOOT"             // boot's path
	semiPersistEnv = "BEAMML_E2E_SEMI_PERSIST_DIR" // boot's --semi_persist_dir
)

const (
	beamModule = "github.com/apache/beam/sdks/v2"
	bootPkg    = beamModule + "/go/container"
	prismPkg   = beamModule + "/go/cmd/prism"
	programPkg = "github.com/beamml/beamml/testing/e2e/pipeline"

	// budget bounds the whole test: builds, job server, job. It takes about
	// 15 s with a warm build cache; with an empty one, the builds alone
	// took 4.5 minutes on 2 busy cores.
	budget = 8 * time.Minute
)

func TestMain(m *testing.M) {
	if boot := os.Getenv(bootEnv); boot != "" {
		execBoot(boot)
	}
	os.Exit(m.Run())
}

// execBoot replaces this process with boot, given prism's arguments with the
// quotes around --id's value removed and --semi_persist_dir added. Being
// the same process (exec, not a child), boot is what prism waits on and
// kills.
func execBoot(boot string) {
	args := []string{boot}
	quoted := false
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--id="); ok && len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			a, quoted = "--id="+v[1:len(v)-1], true
		}
		args = append(args, a)
	}
	if dir := os.Getenv(semiPersistEnv); dir != "" {
		args = append(args, "--semi_persist_dir="+dir)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, bootEnv+"=") || strings.HasPrefix(kv, semiPersistEnv+"=")
	})
	fmt.Fprintf(os.Stderr, "e2e boot shim: prism quoted the worker id: %v; exec %s\n", quoted, strings.Join(args, " "))
	err := syscall.Exec(boot, args, env)
	fmt.Fprintf(os.Stderr, "e2e boot shim: exec %s: %v\n", boot, err)
	os.Exit(1)
}

// TestWorkerPath runs the pipeline of ./pipeline on prism in a PROCESS
// environment whose command is Beam's boot binary, with the worker binary
// built separately, and checks that boot ran that worker, that it
// predicted every record, and that it loaded the model once.
func TestWorkerPath(t *testing.T) {
	start := time.Now()
	deadline := start.Add(budget)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(deadline) {
		// Leave go test's own timeout the time to run the cleanups.
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the test builds boot, prism and the pipeline with the go command, which is not on PATH: %v", err)
	}
	dir := t.TempDir()
	root := filepath.Dir(strings.TrimSpace(string(mustRun(ctx, t, goTool, nil, "env", "GOMOD"))))
	input := filepath.Join(root, "examples", "classify", "testdata", "digits.csv")
	model := filepath.Join(root, "examples", "classify", "digits.onnx")
	want := readRecords(t, input) // id -> PyTorch's prediction
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("the digits model is missing: %v", err)
	}
	t.Logf("%s, Beam %s (go.mod), %d records of %s", strings.TrimSpace(string(mustRun(ctx, t, goTool, nil, "version"))),
		strings.TrimSpace(string(mustRun(ctx, t, goTool, nil, "list", "-m", "-f", "{{.Version}}", beamModule))), len(want), input)

	// Boot copies the worker into a fresh /tmp/binNNN (a fixed path in
	// boot.go) and says so in prism's log; remove those folders after the
	// processes are gone. Registered first, this cleanup runs last.
	var plog *prismLog
	t.Cleanup(func() {
		if plog != nil {
			removeBootScratch(plog)
		}
	})

	bins := buildAll(ctx, t, goTool, dir)
	if t.Failed() {
		return
	}

	// Prism: one port for job management, artifacts and the workers' Fn
	// API; boot writes pipeline_options.json into prism's working folder.
	prismDir := filepath.Join(dir, "prism")
	semiDir := filepath.Join(dir, "semi_persist")
	outDir := filepath.Join(dir, "out")
	for _, d := range []string{prismDir, semiDir, outDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plog = newPrismLog(t, filepath.Join(dir, "prism.log"))
	t.Cleanup(func() {
		if t.Failed() {
			plog.dump(t)
		}
	})
	prism := startGroup(t, "prism", exec.CommandContext(ctx, bins.prism, "-job_port=0", "-serve_http=false",
		"-log_kind=json", "-log_level=debug", fmt.Sprintf("-idle_shutdown_timeout=%v", budget+time.Minute)), prismDir, plog.w)
	var endpoint string
	select {
	case endpoint = <-plog.endpoint:
	case <-prism.done:
		t.Fatalf("prism exited before serving: %v", prism.err)
	case <-ctx.Done():
		t.Fatalf("prism did not report its job endpoint: %v", ctx.Err())
	}
	t.Logf("prism serves job management, artifacts and the Fn API on %s (pid %d, log %s)", endpoint, prism.cmd.Process.Pid, plog.path)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	envConfig, err := json.Marshal(map[string]any{
		"command": self,
		"env":     map[string]string{bootEnv: bins.boot, semiPersistEnv: semiDir},
	})
	if err != nil {
		t.Fatal(err)
	}
	var launcherOut syncBuffer
	launcher := startGroup(t, "launcher", exec.CommandContext(ctx, bins.launcher,
		"--runner=universal", "--endpoint="+endpoint, "--job_name=beamml-e2e",
		"--environment_type=PROCESS", "--environment_config="+string(envConfig),
		"--worker_binary="+bins.worker,
		"--input="+input, "--model="+model, "--output="+outDir), "", &launcherOut)
	t.Logf("the environment command is this test binary, which execs %s with prism's arguments", bins.boot)
	select {
	case <-launcher.done:
	case reason := <-plog.envFailed:
		// Prism does not fail the job when the environment's process
		// exits: give the launcher a moment, then stop waiting.
		select {
		case <-launcher.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the worker environment failed (%s) and the job did not finish; launcher output:\n%s", reason, launcherOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("the job did not finish in time (%v); launcher output:\n%s", ctx.Err(), launcherOut.String())
	}
	launcherLog := launcherOut.String()
	t.Logf("launcher (pid %d) finished after %v of test time: %v\n%s", launcher.cmd.Process.Pid, time.Since(start).Round(time.Millisecond), launcher.err, indent(launcherLog))
	if launcher.err != nil {
		t.Fatalf("launcher: %v", launcher.err)
	}
	for _, s := range []string{"build=" + bins.launcherBuild, "Using specified worker binary: '" + bins.worker + "'"} {
		if !strings.Contains(launcherLog, s) {
			t.Errorf("the launcher's output lacks %q", s)
		}
	}

	// What boot and the worker said, re-logged by prism. Log entries reach
	// prism on their own stream: the worker's may trail the job's end.
	plog.waitFor("[SDK] beamml e2e worker:", 10*time.Second)
	boots := checkBootLog(t, plog, bins)

	// What the worker wrote.
	reports := readReports(t, filepath.Join(outDir, "workers.txt"))
	instances := map[string]bool{}
	var predictions int64
	for _, r := range reports {
		t.Logf("worker process: pid %d, %s, build %s, CGO_ENABLED=%s, %d predictions, model cache: %d load(s), %d hit(s), model instance(s) %v",
			r.PID, r.Exe, r.Build, r.CGO, r.Predictions, r.Loads, r.Hits, r.ModelInstances)
		predictions += r.Predictions
		if r.Build != bins.workerBuild || r.CGO != "0" || r.SHA256 != bins.workerSHA256 {
			t.Errorf("worker pid %d: build %q, CGO_ENABLED=%q, sha256 %s; want the worker binary: build %q, CGO_ENABLED=0, sha256 %s",
				r.PID, r.Build, r.CGO, r.SHA256, bins.workerBuild, bins.workerSHA256)
		}
		if !slices.ContainsFunc(boots, func(b bootRun) bool { return b.to == r.Exe }) {
			t.Errorf("worker pid %d runs %s, which no boot log line says it copied the staged worker to", r.PID, r.Exe)
		}
		if r.PID == launcher.cmd.Process.Pid || r.PID == prism.cmd.Process.Pid {
			t.Errorf("worker pid %d is the launcher's or prism's", r.PID)
		}
		// The pipeline has two RunInference transforms of the model: two
		// DoFns, set up separately, acquire it from the process's cache.
		if r.Loads != 1 || r.Hits < 1 || len(r.ModelInstances) != 1 {
			t.Errorf("worker pid %d: the model cache loaded the model %d time(s) and served it %d time(s) from memory, results name %d model instance(s); want 1 load shared by both RunInference transforms",
				r.PID, r.Loads, r.Hits, len(r.ModelInstances))
		}
		for _, id := range r.ModelInstances {
			instances[id] = true
		}
	}
	if predictions != int64(len(want)) {
		t.Errorf("the worker reports made %d predictions, want %d", predictions, len(want))
	}
	checkPredictions(t, filepath.Join(outDir, "predictions.csv"), want, instances)
	t.Logf("TestWorkerPath took %v", time.Since(start).Round(time.Millisecond))
}

// binaries are what the test builds.
type binaries struct {
	boot, prism, launcher, worker string
	launcherBuild, workerBuild    string // linked in as main.build
	workerSHA256                  string
}

// buildAll builds boot, prism and the launcher in one go command (they
// share most of their dependencies), and the worker with CGO_ENABLED=0 in
// another, concurrently.
func buildAll(ctx context.Context, t *testing.T, goTool, dir string) binaries {
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	host, workerDir := filepath.Join(dir, "host"), filepath.Join(dir, "worker")
	b := binaries{
		boot:          filepath.Join(host, "boot"),
		prism:         filepath.Join(host, "prism"),
		launcher:      filepath.Join(host, "launcher"),
		worker:        filepath.Join(workerDir, "worker"),
		launcherBuild: "launcher-" + nonce,
		workerBuild:   "worker-" + nonce,
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		// go build names each binary after its package's folder; boot and
		// prism have no main.build, and the linker ignores -X for them.
		if _, err := run(ctx, t, goTool, nil, "build", "-o", host+string(filepath.Separator),
			"-ldflags=-X=main.build="+b.launcherBuild, bootPkg, prismPkg, programPkg); err != nil {
			t.Errorf("building boot, prism and the launcher: %v", err)
			return
		}
		for from, to := range map[string]string{"container": b.boot, "pipeline": b.launcher} {
			if err := os.Rename(filepath.Join(host, from), to); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		if _, err := run(ctx, t, goTool, []string{"CGO_ENABLED=0"}, "build", "-o", b.worker,
			"-ldflags=-X=main.build="+b.workerBuild, programPkg); err != nil {
			t.Errorf("building the worker: %v", err)
		}
	})
	wg.Wait()
	if t.Failed() {
		return b
	}
	info, err := buildinfo.ReadFile(b.worker)
	if err != nil {
		t.Fatalf("worker build info: %v", err)
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" {
			t.Fatalf("worker built with CGO_ENABLED=%s, want 0", s.Value)
		}
	}
	b.workerSHA256 = fileSHA256(t, b.worker)
	t.Logf("worker %s: sha256 %s", b.worker, b.workerSHA256)
	return b
}

// bootRun is one boot process as its log lines tell it.
type bootRun struct {
	args     string // boot's command line
	from, to string // the staged worker, and the copy boot ran
}

var (
	bootInitRE = regexp.MustCompile(`^\[SDK\] Initializing Go harness: (\S+) (.*)$`)
	bootCopyRE = regexp.MustCompile(`^\[SDK\] From: "(.*)" To:"(.*)"$`)
	downloadRE = regexp.MustCompile(`Downloaded: (\S+) \(sha256: ([0-9a-f]+), size: (\d+)\)`)
)

// checkBootLog finds boot's lines in prism's log: started as the built boot
// binary with an unquoted worker id, it downloaded the staged worker (with
// the worker's sha256) and copied it to the file it ran. The worker's own
// line must follow.
func checkBootLog(t *testing.T, plog *prismLog, bins binaries) []bootRun {
	t.Helper()
	var boots []bootRun
	downloaded := map[string]string{} // staged path -> sha256
	workerLine := false
	for _, l := range plog.lines() {
		if strings.HasPrefix(l.text, "e2e boot shim:") {
			t.Logf("%s", l.text)
			continue
		}
		if m := bootInitRE.FindStringSubmatch(l.msg); m != nil {
			t.Logf("boot: %s", strings.TrimPrefix(l.msg, "[SDK] "))
			if m[1] != bins.boot {
				t.Errorf("boot ran as %s, want %s", m[1], bins.boot)
			}
			if strings.Contains(m[2], "--id='") {
				t.Errorf("boot got a quoted worker id: %s", m[2])
			}
			boots = append(boots, bootRun{args: m[1] + " " + m[2]})
		}
		if m := downloadRE.FindStringSubmatch(l.msg); m != nil {
			t.Logf("boot: %s", strings.TrimPrefix(l.msg, "[SDK] "))
			downloaded[m[1]] = m[2]
		}
		if m := bootCopyRE.FindStringSubmatch(l.msg); m != nil {
			t.Logf("boot: %s", strings.TrimPrefix(l.msg, "[SDK] "))
			if len(boots) == 0 {
				boots = append(boots, bootRun{})
			}
			boots[len(boots)-1].from, boots[len(boots)-1].to = m[1], m[2]
		}
		if strings.HasPrefix(l.msg, "[SDK] beamml e2e worker:") {
			t.Logf("worker: %s", strings.TrimPrefix(l.msg, "[SDK] "))
			workerLine = workerLine || strings.Contains(l.msg, "build="+bins.workerBuild+" ")
		}
	}
	if len(boots) == 0 {
		t.Fatalf("prism's log has no line of boot's (\"Initializing Go harness: …\"): boot did not run")
	}
	for _, b := range boots {
		if b.to == "" {
			t.Errorf("boot (%s) logged no \"From: … To: …\" line: it did not start a worker", b.args)
			continue
		}
		if sum, ok := downloaded[b.from]; !ok || sum != bins.workerSHA256 {
			t.Errorf("boot ran %s, staged as %s with sha256 %q; want the worker binary's sha256 %s", b.to, b.from, sum, bins.workerSHA256)
		}
	}
	if !workerLine {
		t.Errorf("prism's log has no \"beamml e2e worker: … build=%s\" line from the worker", bins.workerBuild)
	}
	return boots
}

// workerReport is a line of workers.txt (see ./pipeline).
type workerReport struct {
	PID            int
	Exe            string
	SHA256         string
	Build          string
	CGO            string
	Predictions    int64
	Loads, Hits    int64
	ModelInstances []string
}

func readReports(t *testing.T, path string) []workerReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no worker reports: %v", err)
	}
	var reports []workerReport
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r workerReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		reports = append(reports, r)
	}
	return reports
}

// readRecords returns PyTorch's prediction for each record id of the
// digits CSV.
func readRecords(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the digits data is missing: %v", err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) != 1+64+2+10 {
			t.Fatalf("%s: a record of %d fields", path, len(f))
		}
		want[f[0]] = f[1+64+1]
	}
	return want
}

// checkPredictions: one line "id,predicted,label,torch_prediction,instance"
// per record, predicting PyTorch's digit, by a model instance a worker
// reported.
func checkPredictions(t *testing.T, path string, want map[string]string, instances map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no predictions: %v", err)
	}
	seen := map[string]int{}
	for _, line := range strings.Fields(string(data)) {
		f := strings.Split(line, ",")
		if len(f) != 5 {
			t.Errorf("%s: malformed line %q", path, line)
			continue
		}
		seen[f[0]]++
		if torch, ok := want[f[0]]; !ok || f[1] != torch {
			t.Errorf("record %s: predicted %s, PyTorch predicted %q", f[0], f[1], torch)
		}
		if !instances[f[4]] {
			t.Errorf("record %s: predicted by model instance %s, which no worker reported", f[0], f[4])
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("record %s: %d predictions, want 1", id, seen[id])
		}
	}
	t.Logf("%s: %d predictions for %d records, each PyTorch's digit", path, len(strings.Fields(string(data))), len(want))
}

// group is a started process, the leader of its own process group: what it
// starts (prism starts boot, boot the worker) stays in the group, so killing
// the group stops them all, including workers that outlive their boot.
type group struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the leader has exited
	err  error         // its exit, once done is closed
}

func startGroup(t *testing.T, name string, cmd *exec.Cmd, dir string, out io.Writer) *group {
	t.Helper()
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The command's context ends the whole group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	t.Logf("start %s: %s", name, quoteArgs(cmd.Args))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	g := &group{cmd: cmd, done: make(chan struct{})}
	go func() {
		g.err = cmd.Wait()
		close(g.done)
	}()
	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGKILL)
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill %s's process group %d: %v", name, pgid, err)
		}
		select {
		case <-g.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", name, pgid)
		}
	})
	return g
}

// prismLog reads prism's output: its JSON log lines, which carry boot's
// and the worker's log entries as "[SDK] …" messages, and the plain stderr
// lines of the processes it starts.
type prismLog struct {
	path      string
	w         *os.File    // the write end, for prism (and its children) to inherit
	endpoint  chan string // "localhost:PORT", once
	envFailed chan string // an environment process exited on its own

	mu  sync.Mutex
	all []logLine
}

type logLine struct {
	text string // as written
	msg  string // the JSON line's msg, if it is one
}

func newPrismLog(t *testing.T, path string) *prismLog {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &prismLog{path: path, w: w, endpoint: make(chan string, 1), envFailed: make(chan string, 1)}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer f.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			p.add(sc.Text())
			fmt.Fprintln(f, sc.Text())
		}
	}()
	t.Cleanup(func() {
		// Registered before the processes start, this runs after they are
		// killed: the pipe then has no writer left.
		w.Close()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Errorf("prism's output did not end")
		}
		r.Close()
	})
	return p
}

func (p *prismLog) add(text string) {
	var e struct{ Msg, Endpoint, Error string }
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &fields) == nil {
		// Other values of these keys than strings leave the field empty.
		json.Unmarshal(fields["msg"], &e.Msg)
		json.Unmarshal(fields["endpoint"], &e.Endpoint)
		json.Unmarshal(fields["error"], &e.Error)
	}
	switch {
	case e.Msg == "Serving JobManagement":
		select {
		case p.endpoint <- e.Endpoint:
		default:
		}
	case e.Msg == "process failed while running" && !strings.Contains(e.Error, "signal: killed"):
		// Killed is how prism ends an environment after the job.
		select {
		case p.envFailed <- e.Error:
		default:
		}
	}
	p.mu.Lock()
	p.all = append(p.all, logLine{text: text, msg: e.Msg})
	p.mu.Unlock()
}

func (p *prismLog) lines() []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.all)
}

// waitFor waits up to timeout for a line whose msg starts with prefix.
func (p *prismLog) waitFor(prefix string, timeout time.Duration) {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if slices.ContainsFunc(p.lines(), func(l logLine) bool { return strings.HasPrefix(l.msg, prefix) }) {
			return
		}
	}
}

// dump logs what prism and its processes said, less prism's own debug lines.
func (p *prismLog) dump(t *testing.T) {
	var b strings.Builder
	for _, l := range p.lines() {
		if strings.Contains(l.text, `"level":"DEBUG"`) && !strings.HasPrefix(l.msg, "[SDK]") {
			continue
		}
		if l.msg != "" {
			var e struct{ Level, Error string }
			json.Unmarshal([]byte(l.text), &e)
			l.text = e.Level + " " + l.msg
			if e.Error != "" {
				l.text += ": " + e.Error
			}
		}
		if len(l.text) > 2000 {
			l.text = l.text[:2000] + "…"
		}
		b.WriteString(l.text + "\n")
	}
	t.Logf("prism's output (without its own debug lines):\n%s", indent(b.String()))
}

var bootScratchRE = regexp.MustCompile(`^/tmp/bin[0-9]+$`)

// removeBootScratch removes the /tmp/binNNN folders that boot copied
// workers into, as its "From: … To: …" lines name them.
func removeBootScratch(plog *prismLog) {
	for _, l := range plog.lines() {
		if m := bootCopyRE.FindStringSubmatch(l.msg); m != nil && filepath.Base(m[2]) == "worker" && bootScratchRE.MatchString(filepath.Dir(m[2])) {
			os.RemoveAll(filepath.Dir(m[2]))
		}
	}
}

// run runs the go command (or another tool) and logs the command, how long
// it took and, on failure, its output.
func run(ctx context.Context, t *testing.T, name string, env []string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	began := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s%s (%v)", strings.Join(append(env, ""), " "), quoteArgs(cmd.Args), time.Since(began).Round(time.Millisecond))
	if err != nil {
		return out, fmt.Errorf("%s: %w\n%s", quoteArgs(cmd.Args), err, out)
	}
	return out, nil
}

func mustRun(ctx context.Context, t *testing.T, name string, env []string, args ...string) []byte {
	t.Helper()
	out, err := run(ctx, t, name, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// syncBuffer is a bytes.Buffer that a process may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if strings.ContainsAny(a, " \"'{}[]*") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func indent(s string) string {
	return "\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}
