package proof

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDaemonLockLinkNotFollowed: a link a teammate committed at
// .backlog/cache/daemon/lock is not followed when bl daemon takes its
// start-up lock: before, the lock's open created the file it named
// (.git/hooks/post-checkout, say), outside the backlog.
func TestDaemonLockLinkNotFollowed(t *testing.T) {
	bl := blGitBinary(t)
	r := newBacklog(t, bl)
	clone := filepath.Dir(r.dir)
	target := filepath.Join(t.TempDir(), "post-checkout")
	lockDir := filepath.Join(r.dir, "cache", "daemon")
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(lockDir, "lock")); err != nil {
		t.Skip("no symlinks:", err)
	}
	d := exec.Command(bl, "daemon")
	d.Dir, d.Env = clone, blEnv()
	stderr, err := d.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stderr)
	first, _ := rd.ReadString('\n')
	_ = d.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(rd)
	_ = d.Wait()
	if !strings.Contains(first, "serving") {
		t.Errorf("bl daemon did not serve:\n%s%s", first, rest)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("bl daemon created %s through the link at cache/daemon/lock", target)
	}
}
