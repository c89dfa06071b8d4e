//go:build unix

package onnx

import (
	"os"
	"syscall"
)

// openFlags opens external data without waiting: open(2) of a FIFO for
// reading blocks until a writer comes, and external reads check only
// after opening that the file is still the regular file they stat'ed.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
