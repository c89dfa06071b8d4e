// Package repocheck checks what the repository tracks: no compiled binary,
// no file with the executable bit that is not a script, and no file over
// [MaxSize] outside the folders that hold test data and the kernels'
// generated images. A plain clone stays small enough to send to a device
// machine (64 MiB with the GPU bundle: scripts/gpu-bundle.sh), and build
// outputs stay out of git. It also checks the citations of the design
// rules ([Citations]). Its test runs on this repository's git ls-files in
// go test ./... (and so in make test and .ci/run).
package repocheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// DesignDoc is the file of the design rules, from the repository's root.
// Code, scripts and documents cite a rule as "docs/design.md, rule 8", a
// few as "docs/design.md, rules 1–3" or "docs/design.md, rules 3, 9 and
// 10", and a section as "docs/design.md, Layout".
const DesignDoc = "docs/design.md"

// Citations reads the tracked text files under root and returns the
// problems with their citations of the design rules: a name for the design
// document other than DesignDoc (such as the upper-case file outside the
// repository that the citations once named, which a clone does not have),
// a rule that DesignDoc does not number, and a section it does not have.
// A wrapped citation counts: comment markers and line breaks between its
// words are read as spaces. It also checks DesignDoc itself: its rules
// ("N. **…**" at the start of a line) are numbered 1, 2, 3, … in order.
func Citations(root string, files []File) ([]Problem, error) {
	doc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(DesignDoc)))
	if err != nil {
		return nil, fmt.Errorf("repocheck: %w", err)
	}
	rules, sections := designOutline(doc)
	var problems []Problem
	for i, n := range rules {
		if n != i+1 {
			problems = append(problems, Problem{DesignDoc, fmt.Sprintf("rule %d is numbered %d: rules are numbered 1, 2, 3, … in order, and keep their numbers", i+1, n)})
			break
		}
	}
	if len(rules) == 0 {
		problems = append(problems, Problem{DesignDoc, `no numbered rule ("N. **…**" at the start of a line)`})
	}
	for _, f := range files {
		if f.Mode == "120000" || f.Mode == "160000" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("repocheck: %w", err)
		}
		if bytes.IndexByte(data, 0) >= 0 { // binary data: test inputs, fatbins
			continue
		}
		for _, why := range citationProblems(path.Dir(f.Path), data, rules, sections) {
			problems = append(problems, Problem{f.Path, why})
		}
	}
	return problems, nil
}

var (
	// ruleLine is a numbered rule of DesignDoc.
	ruleLine = regexp.MustCompile(`(?m)^(\d+)\. \*\*`)
	// sectionLine is a section of DesignDoc.
	sectionLine = regexp.MustCompile(`(?m)^## +(.+)$`)
	// designName is any name of the design document, with its folders.
	// Only DesignDoc, spelled so, is a good one.
	designName = regexp.MustCompile(`(?i)(?:[\w./-]*/)?\bdesign\.md\b`)
	// designRule is a citation of a rule by the upper-case name without
	// its ".md".
	designRule = regexp.MustCompile(`\bDESIGN,? rules? \d`)
	// citation is DesignDoc followed by what it cites, rules or a section.
	citation = regexp.MustCompile(`docs/design\.md,\s+(?:rules?\s+(\d+(?:\s*(?:,|–|-|and|or)\s*\d+)*)|([A-Z][\w-]*))`)
	// ruleNumber is a number of a rule list, with the dash of a range
	// before it.
	ruleNumber = regexp.MustCompile(`([–-]\s*)?(\d+)`)
	// wrap is what a citation wrapped over lines has between two words: a
	// line break, indentation and a comment marker.
	wrap = regexp.MustCompile(`[ \t]*\r?\n[ \t]*(?://+|#+|\*|--)?[ \t]*`)
)

// designOutline returns the numbers of DesignDoc's rules, in order, and
// the titles of its sections.
func designOutline(doc []byte) (rules []int, sections []string) {
	for _, m := range ruleLine.FindAllSubmatch(doc, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		rules = append(rules, n)
	}
	for _, m := range sectionLine.FindAllSubmatch(doc, -1) {
		sections = append(sections, strings.TrimSpace(string(m[1])))
	}
	return rules, sections
}

// citationProblems returns what is wrong with the citations of the design
// rules in the text of one file in dir, where a name relative to dir that
// is DesignDoc (its bare name in docs/) is DesignDoc too.
func citationProblems(dir string, data []byte, rules []int, sections []string) []string {
	if !mentionsDesign(data) {
		return nil
	}
	text := wrap.ReplaceAllString(string(data), " ")
	var problems []string
	for _, name := range designName.FindAllString(text, -1) {
		if name != DesignDoc && path.Join(dir, name) != DesignDoc {
			problems = append(problems, fmt.Sprintf("cites %q: the design rules are %s, in the repository", name, DesignDoc))
		}
	}
	for _, c := range designRule.FindAllString(text, -1) {
		problems = append(problems, fmt.Sprintf("cites %q: cite %s, rule N", c, DesignDoc))
	}
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		if section := m[2]; section != "" {
			if !slices.ContainsFunc(sections, func(s string) bool { return strings.HasPrefix(s, section) }) {
				problems = append(problems, fmt.Sprintf("cites %q: %s has no section %q", m[0], DesignDoc, section))
			}
			continue
		}
		for _, n := range citedRules(m[1]) {
			if !slices.Contains(rules, n) {
				problems = append(problems, fmt.Sprintf("cites %q: %s has no rule %d (it has rules 1 to %d)", m[0], DesignDoc, n, len(rules)))
			}
		}
	}
	return problems
}

// mentionsDesign reports whether data holds "design", in any case: the
// regular expressions run only on such files, which are few.
func mentionsDesign(data []byte) bool {
	return bytes.Contains(bytes.ToLower(data), []byte("design"))
}

// citedRules returns the rules a list such as "1–3", "3, 9 and 10" or "1
// and 2" names.
func citedRules(list string) []int {
	var rules []int
	for _, m := range ruleNumber.FindAllStringSubmatch(list, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] != "" && len(rules) > 0 { // a range from the number before
			for k := rules[len(rules)-1] + 1; k < n; k++ {
				rules = append(rules, k)
			}
		}
		rules = append(rules, n)
	}
	return rules
}

// mdName is a markdown file's name as a comment cites it, with its folders.
var mdName = regexp.MustCompile(`[\w./-]*[\w-]\.md\b`)

// MissingDocs returns, for the tracked Go files under root, each markdown
// document their comments cite that the repository does not have: a
// document outside it (one beside the checkout, say) is not there for
// someone who cloned it. A name is looked up from the repository's root
// and from the file's folder; a bare name (README.md) also in each folder
// above the file's.
func MissingDocs(root string, files []File) ([]Problem, error) {
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	var problems []Problem
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("repocheck: %w", err)
		}
		seen := map[string]bool{}
		for _, name := range mdName.FindAllString(goComments(data), -1) {
			if seen[name] {
				continue
			}
			seen[name] = true
			if !citedDocExists(have, path.Dir(f.Path), name) {
				problems = append(problems, Problem{f.Path, fmt.Sprintf("cites %s, which the repository does not have", name)})
			}
		}
	}
	return problems, nil
}

// citedDocExists reports whether name, cited from a file in dir, is among
// the tracked paths.
func citedDocExists(have map[string]bool, dir, name string) bool {
	if have[path.Clean(name)] || have[path.Join(dir, name)] {
		return true
	}
	if strings.Contains(name, "/") {
		return false
	}
	for d := dir; d != "." && d != "/"; d = path.Dir(d) {
		if have[path.Join(d, name)] {
			return true
		}
	}
	return false
}

// goComments returns the comments of a Go source file, one per line.
func goComments(src []byte) string {
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("", -1, len(src)), src, nil, scanner.ScanComments)
	var b strings.Builder
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			return b.String()
		}
		if tok == token.COMMENT {
			b.WriteString(lit)
			b.WriteByte('\n')
		}
	}
}
