//go:build !unix

package onnx

import "os"

// openFlags is plain read-only: these systems have no O_NONBLOCK (nor
// FIFOs that a path opens), so the regular-file check before opening is
// what keeps special files out.
const openFlags = os.O_RDONLY
