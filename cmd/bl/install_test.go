package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: make install puts both binaries under PREFIX and, when
// PREFIX/bin is not on PATH, says so with the line to add.
func TestMakeInstall(t *testing.T) {
	for _, tool := range []string{"make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	tmp := t.TempDir()
	install := func(path string) string {
		cmd := exec.Command("make", "-C", "../..", "install", "PREFIX="+tmp, "BIN="+filepath.Join(tmp, "build", "bl"))
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make install: %v\n%s", err, out)
		}
		return string(out)
	}
	out := install(os.Getenv("PATH"))
	for _, name := range []string{"bl", "bl-git"} {
		if fi, err := os.Stat(filepath.Join(tmp, "bin", name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s not installed as an executable: %v", name, err)
		}
	}
	want := `export PATH="` + tmp + `/bin:$PATH"`
	if !strings.Contains(out, "is not on your PATH") || !strings.Contains(out, want) {
		t.Errorf("make install with %s/bin off PATH does not say how to add it:\n%s", tmp, out)
	}
	if out := install(filepath.Join(tmp, "bin") + ":" + os.Getenv("PATH")); strings.Contains(out, "not on your PATH") {
		t.Errorf("make install with %s/bin on PATH still warns:\n%s", tmp, out)
	}
}
