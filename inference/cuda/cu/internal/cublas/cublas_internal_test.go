//go:build cuda

package cublas

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// Load finds the cuBLAS a -tags cuda build was made against: Debian's
// libcublas.so.11 on the CI machine, libcublas.so.12 in the container; or
// the file $BEAMML_CUBLAS names, where it is set. It needs no GPU.
func TestLoad(t *testing.T) {
	l, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("BEAMML_CUBLAS"); p != "" {
		if l.Path() != p {
			t.Errorf("loaded %q, not $BEAMML_CUBLAS (%q)", l.Path(), p)
		}
	} else if !slices.Contains(Sonames, l.Path()) {
		t.Errorf("loaded %q, not one of %q", l.Path(), Sonames)
	}
	t.Logf("loaded %s", l.Path())
}

// A missing library and a library without cuBLAS's entry points fail with
// the names tried and the loader's reasons.
func TestOpenErrors(t *testing.T) {
	_, err := Open("libcublas.so.99", "libm.so.6")
	if err == nil {
		t.Fatal("Open of a missing library and libm: no error")
	}
	for _, want := range []string{"tried libcublas.so.99, libm.so.6", "LD_LIBRARY_PATH=", "BEAMML_CUBLAS",
		"libcublas.so.99: cannot open shared object file", "no symbol cublasCreate_v2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Without a GPU, creating a handle fails with a status, not a crash; with
// one, the handle reports the library's version and is destroyed once.
func TestCreate(t *testing.T) {
	l, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Create()
	if err != nil {
		var s *Status
		if !errors.As(err, &s) || s.Call != "cublasCreate_v2" || s.Name == "" {
			t.Fatalf("Create error %v (%T): want a *Status of cublasCreate_v2 with a name", err, err)
		}
		t.Logf("no GPU here: %v", err)
		return
	}
	v, err := h.Version()
	if err != nil || v < 11000 {
		t.Errorf("Version() = %d, %v; want a cuBLAS 11 or later version", v, err)
	}
	if err := h.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := h.SetStream(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SetStream after Destroy: %v, want ErrClosed", err)
	}
	if err := h.Destroy(); err != nil {
		t.Errorf("second Destroy: %v, want nil", err)
	}
}
