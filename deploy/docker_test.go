package deploy

import (
	"os"
	"strings"
	"testing"
)

// goBuild returns the go build command of the line in file that holds
// one, without its -o argument, and whether the line sets CGO_ENABLED=0.
func goBuild(t *testing.T, file string) (cmd string, cgoOff bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		_, after, ok := strings.Cut(line, "go build ")
		if !ok || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		fields := strings.Fields(after)
		var kept []string
		for i := 0; i < len(fields); i++ {
			if fields[i] == "-o" {
				i++
				continue
			}
			kept = append(kept, fields[i])
		}
		return strings.Join(kept, " "), strings.Contains(line, "CGO_ENABLED=0")
	}
	t.Fatalf("%s: no go build line", file)
	return "", false
}

// TestDockerfile_BuildMatchesDist: the image's binary is built like make
// dist's (static, trimmed, versioned), and the image runs ax as non-root
// with its data in a volume.
func TestDockerfile_BuildMatchesDist(t *testing.T) {
	docker, dockerCGO := goBuild(t, "../Dockerfile")
	dist, distCGO := goBuild(t, "../scripts/dist.sh")
	if docker != dist {
		t.Errorf("Dockerfile builds with\n\t%s\nmake dist with\n\t%s", docker, dist)
	}
	if !dockerCGO || !distCGO {
		t.Errorf("want CGO_ENABLED=0 on both build lines (Dockerfile %v, dist %v)", dockerCGO, distCGO)
	}
	for _, flag := range []string{"-trimpath", `-ldflags "-s -w -X main.version=$VERSION"`, "./cmd/ax"} {
		if !strings.Contains(dist, flag) {
			t.Errorf("build line %q lacks %s", dist, flag)
		}
	}
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`ENTRYPOINT ["ax"]`, "\nUSER 65532:65532\n", "\nVOLUME /data\n", "EXPOSE 7070 7071",
		`"-http", "0.0.0.0:7070"`, `"-raft", "0.0.0.0:7071"`, `"-data", "/data"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Dockerfile lacks %s", strings.TrimSpace(want))
		}
	}
}
