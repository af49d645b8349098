package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: make install puts both binaries under PREFIX and, when
// PREFIX/bin is not on PATH, says so with the line to add. The go it runs
// is a stand-in that writes each -o file: the build itself is every other
// test's, and compiling both binaries twice more (-trimpath misses the
// build cache) took minutes on two cores.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not on PATH")
	}
	tmp := t.TempDir()
	fakeGo := filepath.Join(tmp, "go")
	script := "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then mkdir -p \"$(dirname \"$2\")\" && printf '#!/bin/sh\\n' > \"$2\" && chmod +x \"$2\"; fi; shift; done\n"
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	install := func(path string) string {
		cmd := exec.Command("make", "-C", "../..", "install", "GO="+fakeGo, "VERSION=test", "PREFIX="+tmp, "BIN="+filepath.Join(tmp, "build", "bl"))
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
