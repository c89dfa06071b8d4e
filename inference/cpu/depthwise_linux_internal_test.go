//go:build linux

package cpu

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { dwEndAtGuard = dwMmapEndAtGuard }

// dwMmapEndAtGuard returns n float32s, mapped on their own, that end
// where a page with no access begins: a read or write past them faults.
// The test unmaps them when it ends.
func dwMmapEndAtGuard(t *testing.T, n int) []float32 {
	page := unix.Getpagesize()
	size := (4*n + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	if err := unix.Mprotect(mem[size:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[size-4*n])), n)
}
