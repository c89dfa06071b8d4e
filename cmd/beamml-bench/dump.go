package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/beamml/beamml/inference"
)

// dumpIndex is the file in the -dump folder that names the others:
//
//	{"batch": 8, "device": "cuda",
//	 "inputs": {"input_ids": "input_input_ids.npy"}, "outputs": {"logits": "output_logits.npy"}}
const dumpIndex = "dump.json"

// dumped is the content of dumpIndex.
type dumped struct {
	Batch   int               `json:"batch"`
	Device  string            `json:"device"`
	Inputs  map[string]string `json:"inputs"`  // tensor name → file in the folder
	Outputs map[string]string `json:"outputs"` // tensor name → file in the folder
}

// dump runs the model once at cfg.dumpBatch on the inputs timeBatch
// would make and writes them and the outputs to cfg.dumpDir; device is
// the backend it runs on.
func dump(ctx context.Context, m inference.Model, cfg config, device string) error {
	feeds, err := randomFeeds(m.Inputs(), cfg.dumpBatch, cfg.dynamic, cfg.seed)
	if err != nil {
		return err
	}
	outputs, err := m.Run(ctx, feeds)
	if err != nil {
		return fmt.Errorf("batch %d: %w", cfg.dumpBatch, err)
	}
	if err := os.MkdirAll(cfg.dumpDir, 0o755); err != nil {
		return err
	}
	index := dumped{Batch: cfg.dumpBatch, Device: device, Inputs: map[string]string{}, Outputs: map[string]string{}}
	for _, set := range []struct {
		prefix  string
		tensors map[string]inference.Tensor
		files   map[string]string
	}{{"input_", feeds, index.Inputs}, {"output_", outputs, index.Outputs}} {
		for name, t := range set.tensors {
			file := set.prefix + fileName(name) + ".npy"
			if err := writeNPY(filepath.Join(cfg.dumpDir, file), t); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			set.files[name] = file
		}
	}
	data, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.dumpDir, dumpIndex), append(data, '\n'), 0o644)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// fileName makes a tensor name ("input:0", "/encoder/out") safe as part
// of a file name.
func fileName(tensor string) string {
	return strings.Trim(unsafeName.ReplaceAllString(tensor, "_"), "_.")
}

// npyDescr is NumPy's type string of each element type, little-endian.
var npyDescr = map[inference.DType]string{
	inference.Float32: "<f4",
	inference.Int64:   "<i8",
	inference.Int32:   "<i4",
	inference.Bool:    "|b1",
	inference.Uint8:   "|u1",
	inference.Float16: "<f2",
	inference.Float64: "<f8",
	inference.Int16:   "<i2",
	inference.Int8:    "|i1",
	inference.Uint64:  "<u8",
	inference.Uint32:  "<u4",
	inference.Uint16:  "<u2",
}

// writeNPY writes t as a .npy file, format version 1.0: the magic string,
// the header's length, a Python dict literal giving the type, order and
// shape, padded with spaces to a multiple of 64 bytes and ended by a
// newline, then the elements in row-major order, little-endian.
func writeNPY(path string, t inference.Tensor) error {
	descr, ok := npyDescr[t.DType()]
	if !ok {
		return fmt.Errorf("no .npy type for %v", t.DType())
	}
	var shape strings.Builder
	for _, d := range t.Shape() {
		fmt.Fprintf(&shape, "%d, ", d)
	}
	dims := strings.TrimSuffix(shape.String(), " ")
	if t.Rank() > 1 {
		dims = strings.TrimSuffix(dims, ",")
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims)
	const preamble = 10 // magic (6), version (2), header length (2)
	pad := 64 - (preamble+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"

	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	if err := writeElements(&b, t); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// writeElements appends t's elements to b, little-endian (float16 as
// its IEEE 754 binary16 bits, as numpy's float16).
func writeElements(b *bytes.Buffer, t inference.Tensor) error {
	if _, ok := npyDescr[t.DType()]; !ok {
		return fmt.Errorf("no .npy type for %v", t.DType())
	}
	data, err := t.AppendLittleEndian(nil)
	if err != nil {
		return err
	}
	b.Write(data)
	return nil
}
