package cli_test

import (
	"fmt"
	"os"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// procLocksID is how /proc/locks names the file at path: major:minor
// (hex) and inode.
func procLocksID(ts *testscript.TestScript, path string) (string, bool) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		return "", false
	}
	var st syscall.Stat_t
	ts.Check(syscall.Stat(path, &st))
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino), true
}
