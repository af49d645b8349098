package ledger

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCodeMap: the code map in doc.go names every file of the package
// and of its layers internal/wire, internal/fold, internal/store and
// internal/repair (a pattern such as mmap_*.go names those it matches), and
// each name it gives is a file that exists. In a row of the map, a name with a directory sets the directory
// of the bare names after it, up to the next ';'.
func TestCodeMap(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # Code map")
	if !ok {
		t.Fatal("doc.go has no code map")
	}
	named := map[string]bool{}
	name := regexp.MustCompile(`[a-z0-9_*/]+\.go\b`)
	dir := "."
	for _, line := range strings.Split(section, "\n") {
		row, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			continue
		}
		if !strings.HasPrefix(row, " ") {
			dir = "." // a new row
		}
		for i, part := range strings.Split(row, ";") {
			if i > 0 {
				dir = "."
			}
			for _, pattern := range name.FindAllString(part, -1) {
				if strings.Contains(pattern, "/") {
					dir = filepath.Dir(pattern)
					pattern = filepath.Base(pattern)
				}
				files, err := filepath.Glob(filepath.Join(dir, pattern))
				if err != nil || len(files) == 0 {
					t.Errorf("the code map names %s, which is no file of the package", filepath.Join(dir, pattern))
				}
				for _, f := range files {
					named[f] = true
				}
			}
		}
	}
	for _, d := range []string{".", "internal/wire", "internal/fold", "internal/store", "internal/repair"} {
		files, err := filepath.Glob(filepath.Join(d, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") && filepath.Base(f) != "doc.go" && !named[f] {
				t.Errorf("the code map in doc.go does not name %s", f)
			}
		}
	}
}
