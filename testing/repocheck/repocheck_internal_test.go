package repocheck

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
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

// Every tracked file cites the design rules as docs/design.md, and every
// rule or section it cites is there.
func TestDesignCitations(t *testing.T) {
	root := repoRoot(t)
	files, err := Tracked(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Citations(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("tracked: %s", p)
	}
	// The check is not vacuous: the rules are there, and cited.
	doc, err := os.ReadFile(filepath.Join(root, DesignDoc))
	if err != nil {
		t.Fatal(err)
	}
	if rules, _ := designOutline(doc); len(rules) < 14 {
		t.Errorf("%s numbers %d rules, want at least 14", DesignDoc, len(rules))
	}
	cited := 0
	for _, f := range files {
		if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path))); err == nil && mentionsDesign(data) {
			cited += len(citation.FindAll(wrap.ReplaceAll(data, []byte(" ")), -1))
		}
	}
	if cited < 20 {
		t.Errorf("found %d citations of %s in the tracked files, want at least 20: is the pattern right?", cited, DesignDoc)
	}
}

// Citations finds each kind of bad citation in a repository made for the
// test, and passes good ones, wrapped over comment lines too. The bad ones
// are spelled in pieces here, or TestDesignCitations would find them in
// this file.
func TestCitationsFindProblems(t *testing.T) {
	bad := strings.NewReplacer(
		"OLD", "DESIGN"+".md", // the name the citations once used, outside the repository
		"BARE", "design"+".md",
		"SHORT", "DESIGN"+" rule",
		"CITE", "docs/design.md"+",")
	dir := t.TempDir()
	files := map[string]string{
		DesignDoc: "# Design\n\n## Layout (one folder per concern)\n\n## Rules\n\n" +
			"1. **One.** Why.\n\n2. **Two.** Why.\n\n3. **Three.** Why.\n",
		"good.go":    "// Cited (CITE rule 2), wrapped (CITE\n// rules 1–3), listed (CITE rules 1, 2 and 3)\n// and a section (CITE Layout).\n",
		"good.sh":    "# the worker (CITE\n# rule 3) and libc\n",
		"old.go":     "// (OLD rule 1)\n",
		"old.md":     "see OLD,\nrules 1 and 2\n",
		"short.go":   "// (SHORT 3)\n",
		"bare.md":    "as BARE says\n",
		"norule.sh":  "# CITE\n# rule 4\n",
		"range.md":   "CITE rules 2–5\n",
		"section.md": "CITE Glossary\n",
		"data.bin":   "\x00OLD",
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(bad.Replace(text)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tracked []File
	for name := range files {
		tracked = append(tracked, File{Path: name, Mode: "100644"})
	}
	problems, err := Citations(dir, tracked)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range problems {
		got[p.Path] += p.Why + "; "
	}
	want := map[string][]string{
		"old.go":     {bad.Replace(`cites "OLD"`)},
		"old.md":     {bad.Replace(`cites "OLD"`)},
		"short.go":   {bad.Replace(`cites "SHORT 3"`)},
		"bare.md":    {bad.Replace(`cites "BARE"`)},
		"norule.sh":  {"has no rule 4"},
		"range.md":   {"has no rule 4", "has no rule 5"},
		"section.md": {`has no section "Glossary"`},
	}
	for name, whys := range want {
		for _, why := range whys {
			if !strings.Contains(got[name], why) {
				t.Errorf("%s: problems %q, want one saying %q", name, got[name], why)
			}
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: %s; want no problem", name, got[name])
		}
	}

	// Rules numbered out of order, or not at all, are a problem of the
	// design document itself.
	for _, doc := range []string{"1. **One.**\n\n2. **Two.**\n\n4. **Four.**\n", "No rules.\n"} {
		if err := os.WriteFile(filepath.Join(dir, DesignDoc), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		problems, err := Citations(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 || problems[0].Path != DesignDoc {
			t.Errorf("design document %q: problems %v, want one of %s", doc, problems, DesignDoc)
		}
	}
}

// No Go file cites a markdown document the repository does not have.
func TestCitedDocumentsExist(t *testing.T) {
	root := repoRoot(t)
	files, err := Tracked(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := MissingDocs(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("tracked: %s", p)
	}
}

// MissingDocs finds a document outside the repository, one in a folder it
// does not have, and passes the repository's own, bare names found in a
// folder above, and names in code rather than comments. The bad names are
// spelled in pieces here, or TestCitedDocumentsExist would find them.
func TestMissingDocsFindsProblems(t *testing.T) {
	tracked := []File{
		{Path: "README.md"}, {Path: "docs/design.md"}, {Path: "pkg/testdata/README.md"},
		{Path: "pkg/a.go"}, {Path: "pkg/sub/b.go"},
	}
	dir := t.TempDir()
	for p, text := range map[string]string{
		"pkg/a.go":     "// see README.md, docs/design.md and testdata/README.md; not STYLE" + ".md\nvar x = \"code.md\"\n",
		"pkg/sub/b.go": "/* see ../../shared/DESIGN" + ".md\n and docs/gone" + ".md */\n",
	} {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := MissingDocs(dir, tracked)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	slices.Sort(got)
	want := []string{
		"pkg/a.go: cites STYLE.md, which the repository does not have",
		"pkg/sub/b.go: cites ../../shared/DESIGN" + ".md, which the repository does not have",
		"pkg/sub/b.go: cites docs/gone.md, which the repository does not have",
	}
	if !slices.Equal(got, want) {
		t.Errorf("MissingDocs found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The README is a front door (issue 31): at most 300 lines, and every
// document of docs/ is linked from it, so that what moved out of it has a
// home a reader finds; every relative link it has leads to a file.
func TestREADMEIsAFrontDoor(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 300 {
		t.Errorf("README.md has %d lines, want at most 300: move the detail to docs/", n)
	}
	links := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([\w./-]+)(?:#[\w-]*)?\)`).FindAllStringSubmatch(string(readme), -1) {
		links[path.Clean(m[1])] = true
		if _, err := os.Stat(filepath.Join("../..", m[1])); err != nil {
			t.Errorf("README.md links %s: %v", m[1], err)
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	for _, d := range docs {
		if name := "docs/" + filepath.Base(d); !links[name] {
			t.Errorf("README.md does not link %s", name)
		}
	}
}
