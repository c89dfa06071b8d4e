package container_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/beamml/beamml/beam/dataflowgpu"
)

// glibc is the C library version of each Ubuntu that nvidia/cuda images
// are built on (Ubuntu's libc6 package).
var glibc = map[string]string{"ubuntu20.04": "2.31", "ubuntu22.04": "2.35", "ubuntu24.04": "2.39"}

// stage is one FROM of a Dockerfile, with its instructions.
type stage struct {
	image, name string
	lines       []string
}

// parse reads a Dockerfile's stages, expanding ${ARG} from the global ARG
// defaults (those before the first FROM).
func parse(dockerfile string) ([]stage, error) {
	args := map[string]string{}
	var stages []stage
	expand := func(s string) string {
		return os.Expand(s, func(k string) string { return args[k] })
	}
	// Join continuation lines.
	text := strings.ReplaceAll(dockerfile, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(word) {
		case "ARG":
			if len(stages) == 0 {
				k, v, _ := strings.Cut(rest, "=")
				args[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		case "FROM":
			f := strings.Fields(expand(rest))
			st := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
		default:
			if len(stages) == 0 {
				return nil, fmt.Errorf("%q before the first FROM", line)
			}
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	return stages, nil
}

var beamRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/apache/beam/sdks/v2 v(\S+)`)

// checkDockerfile returns what is wrong with the container's Dockerfile
// against go.mod: the Beam boot image must be apache/beam_go_sdk at
// go.mod's Beam version; the build stage a CUDA 12 devel image and the
// final stage the same CUDA 12 version's runtime image; the final stage
// must copy /opt/apache/beam, set LD_LIBRARY_PATH to include
// /usr/local/nvidia/lib64 (where Dataflow mounts the driver), and enter
// through Beam's boot.
func checkDockerfile(dockerfile, gomod string) []error {
	var errs []error
	m := beamRequire.FindStringSubmatch(gomod)
	if m == nil {
		return []error{errors.New("go.mod does not require github.com/apache/beam/sdks/v2")}
	}
	beam := m[1]
	stages, err := parse(dockerfile)
	if err != nil {
		return []error{err}
	}
	if len(stages) < 2 {
		return []error{fmt.Errorf("%d stages, want a build stage and a runtime stage", len(stages))}
	}
	cuda := regexp.MustCompile(`^nvidia/cuda:(\d+)\.(\d+\.\d+)-(devel|runtime)-(\S+)$`)
	build, final := stages[0], stages[len(stages)-1]
	b, f := cuda.FindStringSubmatch(build.image), cuda.FindStringSubmatch(final.image)
	switch {
	case b == nil || b[3] != "devel":
		errs = append(errs, fmt.Errorf("build stage image %s, want nvidia/cuda:12.x-devel-…", build.image))
	case b[1] != "12":
		errs = append(errs, fmt.Errorf("build stage CUDA %s.%s, want major 12 (gorgonia.org/cu v0.9.6 does not build against CUDA 13: docs/design.md, rule 10)", b[1], b[2]))
	}
	switch {
	case f == nil || f[3] != "runtime":
		errs = append(errs, fmt.Errorf("final stage image %s, want nvidia/cuda:12.x-runtime-…", final.image))
	case f[1] != "12":
		errs = append(errs, fmt.Errorf("final stage CUDA %s.%s, want major 12", f[1], f[2]))
	case b != nil && (b[1] != f[1] || b[2] != f[2]):
		errs = append(errs, fmt.Errorf("build stage CUDA %s.%s, final stage %s.%s: they must match", b[1], b[2], f[1], f[2]))
	}
	// What the launcher checks worker binaries against must be this image.
	if f != nil {
		img := dataflowgpu.Image
		if f[1] != fmt.Sprint(img.CUDAMajor) {
			errs = append(errs, fmt.Errorf("final stage CUDA %s, and dataflowgpu.Image says CUDA %d", f[1], img.CUDAMajor))
		}
		switch g, ok := glibc[f[4]]; {
		case !ok:
			errs = append(errs, fmt.Errorf("final stage on %s: its glibc version is not in this test's table", f[4]))
		case g != img.GLIBC:
			errs = append(errs, fmt.Errorf("final stage on %s (glibc %s), and dataflowgpu.Image says glibc %s", f[4], g, img.GLIBC))
		}
	}
	// Beam's boot: from apache/beam_go_sdk at go.mod's version, directly or
	// through a named stage.
	wantImage := "apache/beam_go_sdk:" + beam
	source := ""
	for _, l := range final.lines {
		if fs := strings.Fields(l); len(fs) == 4 && strings.EqualFold(fs[0], "COPY") && fs[2] == "/opt/apache/beam" && fs[3] == "/opt/apache/beam" {
			source = strings.TrimPrefix(fs[1], "--from=")
		}
	}
	for _, st := range stages {
		if st.name != "" && st.name == source {
			source = st.image
		}
	}
	switch {
	case source == "":
		errs = append(errs, errors.New("the final stage does not COPY --from=apache/beam_go_sdk:… /opt/apache/beam /opt/apache/beam"))
	case source != wantImage:
		errs = append(errs, fmt.Errorf("Beam's boot comes from %s, want %s (go.mod's Beam version)", source, wantImage))
	}
	entry, ldPath := "", ""
	for _, l := range final.lines {
		word, rest, _ := strings.Cut(l, " ")
		switch strings.ToUpper(word) {
		case "ENTRYPOINT":
			entry = strings.TrimSpace(rest)
		case "ENV":
			if v, ok := strings.CutPrefix(strings.TrimSpace(rest), "LD_LIBRARY_PATH="); ok {
				ldPath = v
			}
		}
	}
	if entry != `["/opt/apache/beam/boot"]` {
		errs = append(errs, fmt.Errorf(`ENTRYPOINT %s, want ["/opt/apache/beam/boot"]`, entry))
	}
	if !strings.Contains(":"+ldPath+":", ":/usr/local/nvidia/lib64:") {
		errs = append(errs, fmt.Errorf("LD_LIBRARY_PATH %q does not include /usr/local/nvidia/lib64", ldPath))
	}
	return errs
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfile(t *testing.T) {
	for _, err := range checkDockerfile(read(t, "Dockerfile"), read(t, "../go.mod")) {
		t.Error(err)
	}
}

// The check fails when go.mod moves to another Beam version, or the
// Dockerfile to another CUDA major, Ubuntu (glibc), entry point or driver
// path.
func TestDockerfileCheckCatchesDrift(t *testing.T) {
	dockerfile, gomod := read(t, "Dockerfile"), read(t, "../go.mod")
	for name, tc := range map[string]struct{ dockerfile, gomod, want string }{
		"beam upgraded in go.mod": {dockerfile, beamRequire.ReplaceAllString(gomod, "\tgithub.com/apache/beam/sdks/v2 v2.99.0"), "want apache/beam_go_sdk:2.99.0"},
		"cuda 13":                 {strings.ReplaceAll(dockerfile, "CUDA_VERSION=12.", "CUDA_VERSION=13."), gomod, "want major 12"},
		"entry point":             {strings.ReplaceAll(dockerfile, `ENTRYPOINT ["/opt/apache/beam/boot"]`, `ENTRYPOINT ["/bin/sh"]`), gomod, "ENTRYPOINT"},
		"driver path":             {strings.ReplaceAll(dockerfile, "/usr/local/nvidia/lib64:", ""), gomod, "/usr/local/nvidia/lib64"},
		"ubuntu 24.04":            {strings.ReplaceAll(dockerfile, "UBUNTU=ubuntu22.04", "UBUNTU=ubuntu24.04"), gomod, "dataflowgpu.Image says glibc 2.35"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := checkDockerfile(tc.dockerfile, tc.gomod)
			if !strings.Contains(fmt.Sprint(errs), tc.want) {
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
