//go:build cuda

package cu

import (
	"unsafe"

	"github.com/beamml/beamml/inference/cuda"
)

// StreamBLAS says whether s has a cuBLAS handle of its own, and which: for
// tests that show concurrent streams share none.
func StreamBLAS(s cuda.Stream) (handle uintptr, ok bool) {
	st, isStream := s.(*stream)
	if !isStream {
		return 0, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.blas == nil {
		return 0, false
	}
	return uintptr(unsafe.Pointer(st.blas)), true
}
