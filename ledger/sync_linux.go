package ledger

import (
	"os"
	"syscall"
)

// fdatasync flushes file data and the size, skipping the mtime-only inode
// update that a full fsync also waits for.
func fdatasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
