package store

import (
	"os"
	"syscall"
)

// Fdatasync flushes file data and the size, skipping the mtime-only inode
// update that a full fsync also waits for.
func Fdatasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
