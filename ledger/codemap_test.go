package ledger

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCodeMap: the code map in doc.go names every file of the package
// (a pattern such as mmap_*.go names those it matches), and each name it
// gives is a file that exists.
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
	for _, pattern := range regexp.MustCompile(`[a-z0-9_*]+\.go\b`).FindAllString(section, -1) {
		if strings.HasSuffix(pattern, "_test.go") {
			continue
		}
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Errorf("the code map names %s, which is no file of the package", pattern)
		}
		for _, f := range files {
			named[f] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && f != "doc.go" && !named[f] {
			t.Errorf("the code map in doc.go does not name %s", f)
		}
	}
}
