// Package repocheck checks what the repository tracks: no compiled binary,
// no file with the executable bit that is not a script, and no file over
// [MaxSize] outside the folders that hold test data and the kernels'
// generated images. A plain clone stays small enough to send to a device
// machine (64 MiB with the GPU bundle: scripts/gpu-bundle.sh), and build
// outputs stay out of git. Its test runs on this repository's git ls-files
// in go test ./... (and so in make test and .ci/run).
package repocheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MaxSize is the largest file the repository may track outside [LargeOK].
const MaxSize = 5 << 20

// LargeOK are the folders whose files may be larger than [MaxSize]: ONNX's
// conformance data, copied unchanged (testing/conformance/testdata/README.md),
// and the kernels' generated PTX and fatbins (internal/kernels/README.md).
var LargeOK = []string{
	"testing/conformance/testdata/",
	"internal/kernels/ptx/",
	"internal/kernels/fatbin/",
}

// File is one tracked file: its path from the repository's root and its
// git mode (100644, 100755 or 120000).
type File struct {
	Path string
	Mode string
}

// Tracked lists the files git tracks in the repository at root.
func Tracked(root string) ([]File, error) {
	cmd := exec.Command("git", "ls-files", "--stage", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("repocheck: git ls-files in %s: %w", root, err)
	}
	var files []File
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(string(rec), "\t")
		mode, _, _ := strings.Cut(meta, " ")
		if !ok || mode == "" {
			return nil, fmt.Errorf("repocheck: git ls-files: unexpected record %q", rec)
		}
		files = append(files, File{Path: path, Mode: mode})
	}
	return files, nil
}

// Problem is a tracked file the repository should not hold, and why.
type Problem struct {
	Path string
	Why  string
}

func (p Problem) String() string { return p.Path + ": " + p.Why }

// Check reads each file under root and returns the problems: a compiled
// binary (ELF, Mach-O, PE or a Go/Unix archive) anywhere, a file with the
// executable bit that does not start with "#!", a file over MaxSize
// outside LargeOK. A tracked file missing from the work tree is skipped:
// it is what the next commit deletes.
func Check(root string, files []File) ([]Problem, error) {
	var problems []Problem
	for _, f := range files {
		if f.Mode == "120000" || f.Mode == "160000" { // a symbolic link, a submodule
			continue
		}
		full := filepath.Join(root, filepath.FromSlash(f.Path))
		info, err := os.Lstat(full)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("repocheck: %w", err)
		}
		head, err := readHead(full)
		if err != nil {
			return nil, fmt.Errorf("repocheck: %w", err)
		}
		if kind := binaryKind(head); kind != "" {
			problems = append(problems, Problem{f.Path, fmt.Sprintf("a compiled binary (%s, %d bytes): build outputs belong in out/ or .gitignore", kind, info.Size())})
		} else if f.Mode == "100755" && !bytes.HasPrefix(head, []byte("#!")) {
			problems = append(problems, Problem{f.Path, "executable, but not a script (no #! line): git update-index --chmod=-x, or track the source instead"})
		}
		if info.Size() > MaxSize && !largeOK(f.Path) {
			problems = append(problems, Problem{f.Path, fmt.Sprintf("%d bytes, over %d outside %s", info.Size(), MaxSize, strings.Join(LargeOK, ", "))})
		}
	}
	return problems, nil
}

func largeOK(path string) bool {
	for _, dir := range LargeOK {
		if strings.HasPrefix(path, dir) {
			return true
		}
	}
	return false
}

func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, err := io.ReadFull(bufio.NewReader(f), head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return head[:n], nil
}

// binaryKind names the executable or object format head starts with, or
// is "".
func binaryKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF"
	case bytes.HasPrefix(head, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.HasPrefix(head, []byte{0xce, 0xfa, 0xed, 0xfe}),
		bytes.HasPrefix(head, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return "Mach-O"
	case bytes.HasPrefix(head, []byte("MZ")) && len(head) >= 64 && peOffsetPlausible(head):
		return "PE"
	case bytes.HasPrefix(head, []byte("!<arch>\n")):
		return "ar archive"
	case bytes.HasPrefix(head, []byte("\x00asm")):
		return "WebAssembly"
	}
	return ""
}

// peOffsetPlausible: a DOS header's e_lfanew (at 0x3c) points past the
// header, as every PE file's does; two bytes "MZ" alone are too common in
// binary test data to call a file an executable.
func peOffsetPlausible(head []byte) bool {
	off := int(head[0x3c]) | int(head[0x3d])<<8 | int(head[0x3e])<<16 | int(head[0x3f])<<24
	return off >= 64 && off < 1<<16
}
