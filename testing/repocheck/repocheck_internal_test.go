package repocheck

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two folders up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skipf("NOT RUN: %s is not a git checkout (a source archive tracks nothing to check)", root)
	}
	return root
}

// The repository tracks no binary, no non-script executable and no large
// file outside the test data and the kernels' images.
func TestRepository(t *testing.T) {
	root := repoRoot(t)
	files, err := Tracked(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files: want the whole repository", len(files))
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("tracked: %s", p)
	}
}

// Check finds each kind of problem in a repository made for the test, and
// passes what is allowed: scripts, large conformance data, a symbolic link.
func TestCheckFindsProblems(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name string, data []byte, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...)
	pe := make([]byte, 128)
	copy(pe, "MZ")
	pe[0x3c] = 0x80
	big := make([]byte, MaxSize+1)
	git("init", "-q")
	write("tool", elf, 0o755)                                           // a binary, executable
	write("lib/blob.o", elf, 0o644)                                     // a binary without the bit
	write("win/tool.exe", pe, 0o644)                                    // a PE file
	write("run.sh", []byte("#!/bin/sh\necho ok\n"), 0o755)              // a script: fine
	write("notes.txt", []byte("plain text\n"), 0o755)                   // executable, not a script
	write("data/big.bin", big, 0o644)                                   // too large here
	write("testing/conformance/testdata/node/x/input_0.pb", big, 0o644) // large, allowed
	write("testing/conformance/testdata/node/y/input_0.pb", []byte("MZ\x01\x02 test data"), 0o644)
	if err := os.Symlink("run.sh", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "test")

	files, err := Tracked(dir)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range problems {
		got[p.Path] += p.Why + "; "
	}
	want := map[string]string{
		"tool":         "a compiled binary (ELF",
		"lib/blob.o":   "a compiled binary (ELF",
		"win/tool.exe": "a compiled binary (PE",
		"notes.txt":    "not a script",
		"data/big.bin": "over 5242880",
	}
	for name, why := range want {
		if !strings.Contains(got[name], why) {
			t.Errorf("%s: problems %q, want one saying %q", name, got[name], why)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: %s; want no problem", name, got[name])
		}
	}
}

// A go build of any main package, in the root or in its own folder, and a
// go test -c, write files that git ignores.
func TestGitignoreCoversBuildOutputs(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}}{{end}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var outputs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		name := path.Base(rel)
		outputs = append(outputs, name, rel+"/"+name)
	}
	if len(outputs) < 10 {
		t.Fatalf("go list found %d main packages' outputs: want every main package", len(outputs)/2)
	}
	outputs = append(outputs, "inference/cuda/cu/cu.test", "out/gpu/payload.tar.xz")
	check := exec.Command("git", append([]string{"check-ignore", "--no-index", "-v", "-n", "--"}, outputs...)...)
	check.Dir = root
	res, _ := check.Output() // exits 1 when one is not ignored; the lines say which
	for _, line := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		// "<source>:<line>:<pattern>\t<path>", or "::\t<path>" for a path no pattern matches.
		meta, p, _ := strings.Cut(line, "\t")
		if meta == "::" {
			t.Errorf("%s is not in .gitignore: a go build there would leave a binary to commit", p)
		}
		outputs = slices.DeleteFunc(outputs, func(o string) bool { return o == p })
	}
	if len(outputs) != 0 {
		t.Errorf("git check-ignore said nothing of %q", outputs)
	}
}
