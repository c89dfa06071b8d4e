// Package kernels holds the CUDA C kernels of the GPU backend and the PTX
// nvcc compiles them to (make kernels), embedded in the binary. The PTX
// targets compute_60, so one module loads on every GPU from Pascal on: the
// driver compiles it for the device at load (DESIGN.md rule 5).
package kernels

import (
	"embed"
	"path"
	"regexp"
	"slices"
	"strings"
)

//go:embed ptx/*.ptx
var ptx embed.FS

// Module is one compiled kernel source file.
type Module struct {
	Name    string   // the source's base name: "elementwise" for elementwise.cu
	PTX     []byte   // NUL-terminated, as cuModuleLoadData wants
	Entries []string // the kernels it defines, sorted
}

var entryRE = regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z_][A-Za-z0-9_]*)\(`)

// Modules returns every kernel module, by name.
func Modules() []Module {
	files, err := ptx.ReadDir("ptx")
	if err != nil {
		panic(err) // embedded at build time
	}
	var mods []Module
	for _, f := range files {
		b, err := ptx.ReadFile(path.Join("ptx", f.Name()))
		if err != nil {
			panic(err)
		}
		m := Module{Name: strings.TrimSuffix(f.Name(), ".ptx"), PTX: append(b, 0)}
		for _, e := range entryRE.FindAllSubmatch(b, -1) {
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
