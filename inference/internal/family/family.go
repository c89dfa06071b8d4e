// Package family records where each backend implements each operator, so
// that a test can check that the backends mirror each other (docs/design.md,
// Layout: operator families are files of the same name in every backend). A
// backend's registration function calls Record from the init function of
// the file that implements the operator, ops_<family>.go in inference/cpu
// and lower_<family>.go in inference/cuda; the family is read off that
// file's name.
//
// The records are written by init functions only, and read by tests and
// by onnx.Describe, which reports the operators a linked backend has
// kernels for.
package family

import (
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

var (
	mu      sync.Mutex
	records = map[string]map[string]string{} // backend → operator → family or file
)

// Record notes that backend registers op from the file of the function
// that called its caller (the init function of an ops or lower file): the
// family is the file's name without its prefix (ops_, lower_) and .go; a
// file of another name is recorded as its name, which no family matches.
func Record(backend, op string) {
	_, file, _, ok := runtime.Caller(2)
	name := filepath.Base(file)
	if !ok {
		name = "(unknown file)"
	}
	fam := name
	for _, prefix := range []string{"ops_", "lower_"} {
		if rest, found := strings.CutPrefix(name, prefix); found && strings.HasSuffix(rest, ".go") && !strings.HasSuffix(rest, "_test.go") {
			fam = strings.TrimSuffix(rest, ".go")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if records[backend] == nil {
		records[backend] = map[string]string{}
	}
	records[backend][op] = fam
}

// Of returns backend's operators and the family each is implemented in (a
// file name, .go included, for an operator registered from elsewhere).
func Of(backend string) map[string]string {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]string, len(records[backend]))
	for op, f := range records[backend] {
		out[op] = f
	}
	return out
}
