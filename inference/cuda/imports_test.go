package cuda_test

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository root, from this package's folder.
const moduleRoot = "../.."

// gorgonia.org/cu exits the process at init without a GPU, so only files
// built with the cuda tag may import it; go-nvml needs cgo, and only the
// cuda build links it (docs/design.md, rules 1 and 2). Each import of
// either must sit behind its constraint.
func TestGuardedImports(t *testing.T) {
	// go-nvml needs cgo, and only the GPU worker's build (the cuda tag)
	// links it: a CPU pipeline builds without its cgo warnings.
	guards := map[string][]string{gorgoniaCU: {"cuda"}, "github.com/NVIDIA/go-nvml": {"cgo", "cuda"}}
	seen := map[string]int{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != moduleRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "out") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for mod, tags := range guards {
				if p != mod && !strings.HasPrefix(p, mod+"/") {
					continue
				}
				seen[mod]++
				expr := buildConstraint(t, path, f.Comments)
				for _, tag := range tags {
					if expr == nil || expr.Eval(func(t string) bool { return t != tag }) {
						t.Errorf("%s imports %s but builds without the %s tag; give it //go:build %s", path, p, tag, strings.Join(tags, " && "))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for mod := range guards {
		if seen[mod] == 0 {
			t.Errorf("no file imports %s: is the walk looking at the module?", mod)
		}
	}
}

func buildConstraint(t *testing.T, path string, groups []*ast.CommentGroup) constraint.Expr {
	for _, g := range groups {
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				expr, err := constraint.Parse(c.Text)
				if err != nil {
					t.Errorf("%s: %v", path, err)
				}
				return expr
			}
		}
	}
	return nil
}

// The default build, and the build without cgo that Beam makes of
// workers, link neither gorgonia.org/cu nor (without cgo) go-nvml.
func TestDefaultBuildDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	for _, tc := range []struct {
		cgo       string
		forbidden []string
	}{
		{"1", []string{gorgoniaCU}},
		{"0", []string{gorgoniaCU, "github.com/NVIDIA/go-nvml"}},
	} {
		cmd := exec.Command("go", "list", "-deps", "-test", "./...")
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+tc.cgo, "GOFLAGS=-tags=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("CGO_ENABLED=%s go list -deps -test ./...: %v\n%s", tc.cgo, err, stderr(err))
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, f := range tc.forbidden {
				if pkg == f || strings.HasPrefix(pkg, f+"/") {
					t.Errorf("CGO_ENABLED=%s: the default build depends on %s", tc.cgo, pkg)
				}
			}
		}
	}
}

func stderr(err error) string {
	if e, ok := err.(*exec.ExitError); ok {
		return string(e.Stderr)
	}
	return ""
}

// gorgoniaCU is gorgonia.org/cu's import path, spelled in two parts so that
// the text checks that look for imports of it do not match this test.
const gorgoniaCU = "gorgonia.org" + "/cu"
