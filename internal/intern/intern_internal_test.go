package intern

import (
	"fmt"
	"testing"
	"unsafe"
)

func TestString(t *testing.T) {
	a, b := String([]byte("input_ids")), String([]byte("input_ids"))
	if a != "input_ids" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("String gave %q and %q, want one string twice", a, b)
	}
	if String(nil) != "" {
		t.Error("String(nil) is not empty")
	}
	long := make([]byte, maxLen+1)
	if x, y := String(long), String(long); len(x) != maxLen+1 || unsafe.StringData(x) == unsafe.StringData(y) {
		t.Error("a long string was cached")
	}
	for i := range 2 * maxStrings {
		String([]byte(fmt.Sprint("name", i)))
	}
	if n := len(cache.m); n > maxStrings {
		t.Errorf("the cache holds %d strings, over %d", n, maxStrings)
	}
	if allocs := testing.AllocsPerRun(100, func() { String([]byte("input_ids")) }); allocs > 1 {
		t.Errorf("String of a cached name: %v allocations", allocs)
	}
}
