package kernels_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/beamml/beamml/internal/kernels"
)

// The fatbin container as nvcc 11.8 writes it (no header of the toolkit
// declares it; the layout is the one cuobjdump reads, as described by
// n-eiling/cuda-fatbin-decompression): a 16-byte header (magic 0xBA55ED50,
// version 1, header size 16, size of what follows), then images, each a
// header (kind 1 = PTX, 2 = ELF, at 0; its own size at 4; the payload's
// size at 8; the architecture at 28; flags at 40, 0x2000 = compressed)
// followed by the payload.
const (
	fatbinMagic     = 0xBA55ED50
	fatbinKindPTX   = 1
	fatbinKindELF   = 2
	fatbinCompress  = 0x2000
	fatbinImageHead = 64 // the fields above; nvcc 11.8 writes 72
)

type fatbinImage struct {
	kind       int // fatbinKindPTX or fatbinKindELF
	arch       int // major*10+minor: sm_XX for ELF, compute_XX for PTX
	compressed bool
	size       int
}

func parseFatbin(b []byte) ([]fatbinImage, error) {
	le := binary.LittleEndian
	if len(b) < 16 || le.Uint32(b) != fatbinMagic {
		return nil, fmt.Errorf("no fatbin magic 0x%X", fatbinMagic)
	}
	if v, h := le.Uint16(b[4:]), le.Uint16(b[6:]); v != 1 || h != 16 {
		return nil, fmt.Errorf("fatbin version %d, header size %d; want 1, 16", v, h)
	}
	if n := le.Uint64(b[8:]); n != uint64(len(b)-16) {
		return nil, fmt.Errorf("fatbin says %d bytes follow its header; %d do", n, len(b)-16)
	}
	var images []fatbinImage
	for off := 16; off < len(b); {
		if len(b)-off < fatbinImageHead {
			return nil, fmt.Errorf("image header at %d: only %d bytes left", off, len(b)-off)
		}
		h := b[off:]
		head, size := int(le.Uint32(h[4:])), le.Uint64(h[8:])
		if head < fatbinImageHead || uint64(len(h)) < uint64(head) || uint64(len(h)-head) < size {
			return nil, fmt.Errorf("image at %d: header %d bytes, payload %d bytes, %d bytes left", off, head, size, len(h))
		}
		images = append(images, fatbinImage{
			kind:       int(le.Uint16(h)),
			arch:       int(le.Uint32(h[28:])),
			compressed: le.Uint64(h[40:])&fatbinCompress != 0,
			size:       int(size),
		})
		off += head + int(size)
	}
	return images, nil
}

// Every module's fatbin holds SASS for exactly kernels.SASSArchs and PTX
// for exactly kernels.PTXArchs, compressed: what make kernels builds and
// what the GPU loads without waiting for the JIT.
func TestFatbins(t *testing.T) {
	mods := kernels.Modules()
	if len(mods) == 0 {
		t.Fatal("no modules")
	}
	total := 0
	for _, m := range mods {
		images, err := parseFatbin(m.Fatbin)
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		var elf, ptx []int
		for _, im := range images {
			switch im.kind {
			case fatbinKindELF:
				elf = append(elf, im.arch)
			case fatbinKindPTX:
				ptx = append(ptx, im.arch)
			default:
				t.Errorf("%s: image of kind %d for arch %d", m.Name, im.kind, im.arch)
			}
			if !im.compressed {
				t.Errorf("%s: the image of kind %d for arch %d is not compressed (make kernels passes -Xfatbin=-compress-all)", m.Name, im.kind, im.arch)
			}
		}
		slices.Sort(elf)
		slices.Sort(ptx)
		if !slices.Equal(elf, kernels.SASSArchs()) {
			t.Errorf("%s: SASS for %v, want %v (run make kernels)", m.Name, elf, kernels.SASSArchs())
		}
		if !slices.Equal(ptx, kernels.PTXArchs()) {
			t.Errorf("%s: PTX for %v, want %v (run make kernels)", m.Name, ptx, kernels.PTXArchs())
		}
		total += len(m.Fatbin)
		t.Logf("%s: %d bytes of fatbin, %d of compute_60 PTX, %d kernels", m.Name, len(m.Fatbin), len(m.PTX), len(m.Entries))
	}
	t.Logf("%d modules, %d bytes of fatbin", len(mods), total)
}

func TestParseFatbinRejects(t *testing.T) {
	good := kernels.Modules()[0].Fatbin
	for name, b := range map[string][]byte{
		"empty":     nil,
		"PTX text":  kernels.Modules()[0].PTX,
		"truncated": good[:len(good)-8],
		"one byte more": func() []byte {
			b := slices.Clone(good)
			binary.LittleEndian.PutUint64(b[8:], uint64(len(b)-16+1))
			return append(b, 0)
		}(),
	} {
		if _, err := parseFatbin(b); err == nil {
			t.Errorf("%s: parseFatbin accepted it", name)
		}
	}
}

func TestModules(t *testing.T) {
	for _, m := range kernels.Modules() {
		if len(m.Entries) == 0 || len(m.PTX) == 0 || len(m.Fatbin) == 0 {
			t.Errorf("%s: %d entries, %d bytes of PTX, %d bytes of fatbin", m.Name, len(m.Entries), len(m.PTX), len(m.Fatbin))
		}
		if !slices.IsSorted(m.Entries) {
			t.Errorf("%s: entries not sorted: %v", m.Name, m.Entries)
		}
	}
}

// No PTX names a symbol after the path it was compiled from: nvcc gives a
// static of a template function (a __shared__ array declared in one) a
// name with a hash of the source file's path, "_INTERNAL_<hash>", so
// another checkout would compile other bytes and CI's regenerate-and-diff
// would fail (common.cuh: templates take their shared arrays from their
// entry points).
func TestPTXIndependentOfThePath(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("ptx", "*.ptx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no PTX: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte("_INTERNAL_")); i >= 0 {
			end := min(len(b), i+80)
			t.Errorf("%s names a symbol after its source path: %q", f, b[i:end])
		}
	}
}
