package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// digits is examples/classify's MLP: pixels float32[batch, 64] → logits
// float32[batch, 10].
const digits = "../../examples/classify/digits.onnx"

// The report has one row per asked batch size, in order, each with the
// asked number of timed runs and times that are ordered and positive.
func TestBenchTimesEveryBatch(t *testing.T) {
	cfg := config{model: digits, device: inference.CPU, batches: []int{1, 3, 16}, runs: 7, warmup: 1, dynamic: 1, seed: 1}
	rep, err := bench(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Device != "cpu" || rep.Model != digits || rep.LoadMS <= 0 {
		t.Errorf("device %q, model %q, load %v ms; want cpu, %s, > 0", rep.Device, rep.Model, rep.LoadMS, digits)
	}
	if len(rep.Batches) != len(cfg.batches) {
		t.Fatalf("%d batch rows, want %d: %+v", len(rep.Batches), len(cfg.batches), rep.Batches)
	}
	for i, b := range rep.Batches {
		if b.Batch != cfg.batches[i] || b.Runs != cfg.runs || b.Error != "" {
			t.Errorf("row %d: batch %d, %d runs, error %q; want batch %d, %d runs, no error", i, b.Batch, b.Runs, b.Error, cfg.batches[i], cfg.runs)
		}
		if !(b.FirstMS > 0 && b.MinMS > 0 && b.MinMS <= b.P50MS && b.P50MS <= b.P90MS) {
			t.Errorf("batch %d: first %v, min %v, p50 %v, p90 %v ms; want positive, min ≤ p50 ≤ p90", b.Batch, b.FirstMS, b.MinMS, b.P50MS, b.P90MS)
		}
		if want := float64(b.Batch) * 1000 / b.P50MS; math.Abs(b.ItemsPerSec-want) > 1e-9*want {
			t.Errorf("batch %d: %v items/s, want batch / p50 = %v", b.Batch, b.ItemsPerSec, want)
		}
	}
}

// -dump writes the batch's inputs and outputs as .npy files that hold
// what the model computes: the logits of the dumped pixels, recomputed
// here from the same model on the CPU.
func TestDumpWritesInputsAndOutputs(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	status := run(context.Background(), []string{"-model", digits, "-device", "cpu", "-batch", "2,5", "-n", "2",
		"-dump", dir, "-dump-batch", "5", "-json", filepath.Join(dir, "report.json")}, &stdout, &stderr)
	if status != exitOK || stderr.Len() > 0 {
		t.Fatalf("status %d, stderr %q", status, stderr.String())
	}
	for _, want := range []string{"device  cpu: ", "   batch   runs   first ms   p50 ms", "dump    " + filepath.Join(dir, dumpIndex)} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	var rep report
	readJSON(t, filepath.Join(dir, "report.json"), &rep)
	if len(rep.Batches) != 2 || rep.Batches[1].Batch != 5 || rep.Dump != dir {
		t.Errorf("report.json: %+v", rep)
	}

	var index dumped
	readJSON(t, filepath.Join(dir, dumpIndex), &index)
	if index.Batch != 5 || index.Device != "cpu" || index.Inputs["pixels"] != "input_pixels.npy" || index.Outputs["logits"] != "output_logits.npy" {
		t.Fatalf("%s: %+v", dumpIndex, index)
	}
	pixels, shape := readNPY(t, filepath.Join(dir, index.Inputs["pixels"]))
	if shape != "(5, 64)" {
		t.Errorf("pixels shape %s, want (5, 64)", shape)
	}
	logits, shape := readNPY(t, filepath.Join(dir, index.Outputs["logits"]))
	if shape != "(5, 10)" {
		t.Errorf("logits shape %s, want (5, 10)", shape)
	}
	backend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(digits, backend, inference.FP32)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in, err := inference.New([]int{5, 64}, pixels)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"pixels": in})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := inference.Data[float32](out["logits"])
	for i := range want {
		if logits[i] != want[i] {
			t.Fatalf("logits[%d] = %v in the dump, %v recomputed", i, logits[i], want[i])
		}
	}
}

// A .npy file of a vector has a one-element tuple for its shape; the
// header ends on a 64-byte boundary.
func TestNPYVector(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.npy")
	v, _ := inference.New([]int{3}, []int64{1, -2, 3})
	if err := writeNPY(path, v); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	header := string(data[10 : 10+binary.LittleEndian.Uint16(data[8:10])])
	if want := "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"; !strings.HasPrefix(header, want) {
		t.Errorf("header %q, want %q and padding", header, want)
	}
	if (10+len(header))%64 != 0 || !strings.HasSuffix(header, "\n") || len(data) != 10+len(header)+3*8 {
		t.Errorf("%d header bytes, %d in all; want the data to start at a multiple of 64 after a newline", len(header), len(data))
	}
}

// float16 is NumPy's '<f2': the binary16 bits, little-endian.
func TestNPYFloat16(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.npy")
	v, _ := inference.New([]int{1, 3}, []inference.Half{0x3c00, 0xc000, 0x3800}) // 1, -2, 0.5
	if err := writeNPY(path, v); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	header := string(data[10 : 10+binary.LittleEndian.Uint16(data[8:10])])
	if want := "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 3), }"; !strings.HasPrefix(header, want) {
		t.Errorf("header %q, want %q and padding", header, want)
	}
	if got := data[10+len(header):]; !bytes.Equal(got, []byte{0, 0x3c, 0, 0xc0, 0, 0x38}) {
		t.Errorf("data % x, want 00 3c 00 c0 00 38", got)
	}
}

func TestExitStatuses(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
		stderr string
	}{
		{[]string{"-device", "cpu"}, exitUsage, "-model is required"},
		{[]string{"-model", digits, "-batch", "1,0"}, exitUsage, `-batch: "0" is not a positive integer`},
		{[]string{"-model", digits, "-device", "tpu"}, exitUsage, `device "tpu" is not registered`},
		{[]string{"-model", "no-such.onnx", "-device", "cpu"}, exitFailed, "no-such.onnx"},
		{[]string{"-model", digits, "-device", "cpu", "-batch", "2", "-n", "1"}, exitOK, ""},
		{[]string{"-load-kernels"}, exitUsage, "this binary has no CUDA backend"},
	} {
		var stdout, stderr bytes.Buffer
		status := run(context.Background(), tc.args, &stdout, &stderr)
		if status != tc.status || (tc.stderr == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: status %d, stderr %q; want %d and %q", tc.args, status, stderr.String(), tc.status, tc.stderr)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readNPY reads a float32 .npy file and returns its elements and the
// shape tuple of its header.
func readNPY(t *testing.T, path string) ([]float32, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x93NUMPY\x01\x00")) {
		t.Fatalf("%s: no .npy magic", path)
	}
	n := int(binary.LittleEndian.Uint16(data[8:10]))
	header := string(data[10 : 10+n])
	if !strings.Contains(header, "'descr': '<f4'") {
		t.Fatalf("%s: header %q, want float32", path, header)
	}
	shape := header[strings.Index(header, "'shape': ")+len("'shape': "):]
	shape = shape[:strings.Index(shape, ")")+1]
	v := make([]float32, (len(data)-10-n)/4)
	if err := binary.Read(bytes.NewReader(data[10+n:]), binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return v, shape
}
