// Package kernels holds the CUDA C kernels of the GPU backend and what
// nvcc compiles them to (make kernels), embedded in the binary:
//
//   - fatbin/NAME.fatbin, the image the device loads: machine code (SASS)
//     for each GPU generation in SASSArchs, so that no process waits for
//     the driver's JIT compiler on those GPUs, and PTX for each virtual
//     architecture in PTXArchs, which the driver compiles at load for any
//     other GPU: compute_60 for the older ones (P100, P4, V100), and the
//     newest the toolkit knows for the newer ones (Blackwell on);
//   - ptx/NAME.ptx, the compute_60 PTX alone: readable, assembled by ptxas
//     for every target (make ptxas), and where a module's entry points are
//     read from.
//
// README.md says which toolkit builds them, and what a newer one changes.
package kernels

import (
	"embed"
	"path"
	"regexp"
	"slices"
	"strings"
)

//go:embed ptx/*.ptx fatbin/*.fatbin
var compiled embed.FS

// SASSArchs returns the GPU architectures (compute capability
// major*10+minor) every fatbin holds machine code for: T4, A100, A10/A40,
// L4, H100/H200. The Makefile's FATBIN_SASS lists the same.
func SASSArchs() []int { return []int{75, 80, 86, 89, 90} }

// PTXArchs returns the virtual architectures every fatbin holds PTX for:
// 60, which the driver JITs on Pascal and Volta, and 90, the newest CUDA
// 11.8 knows, which it JITs on GPUs newer than the newest of SASSArchs.
// The Makefile's FATBIN_PTX lists the same.
func PTXArchs() []int { return []int{60, 90} }

// Module is one compiled kernel source file.
type Module struct {
	Name    string   // the source's base name: "elementwise" for elementwise.cu
	Fatbin  []byte   // the image to load (cuModuleLoadData): SASS for SASSArchs, PTX for PTXArchs
	PTX     []byte   // the compute_60 PTX, as text
	Entries []string // the kernels it defines, sorted
}

var entryRE = regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z_][A-Za-z0-9_]*)\(`)

// Modules returns every kernel module, by name.
func Modules() []Module {
	files, err := compiled.ReadDir("ptx")
	if err != nil {
		panic(err) // embedded at build time
	}
	var mods []Module
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".ptx")
		ptx, err := compiled.ReadFile(path.Join("ptx", f.Name()))
		if err != nil {
			panic(err)
		}
		fatbin, err := compiled.ReadFile(path.Join("fatbin", name+".fatbin"))
		if err != nil {
			panic(err) // make kernels writes both
		}
		m := Module{Name: name, Fatbin: fatbin, PTX: ptx}
		for _, e := range entryRE.FindAllSubmatch(ptx, -1) {
			m.Entries = append(m.Entries, string(e[1]))
		}
		slices.Sort(m.Entries)
		mods = append(mods, m)
	}
	return mods
}

// Entries returns every kernel of every module, sorted.
func Entries() []string {
	var all []string
	for _, m := range Modules() {
		all = append(all, m.Entries...)
	}
	slices.Sort(all)
	return all
}
