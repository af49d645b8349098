//go:build unix

package store

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only, so a large file is
// read by touching only the pages used rather than copied into the heap.
// The mapping outlives f; unmap releases it, and the data must not be used
// (or kept, even as a sub-slice) after.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), err error) {
	if size == 0 {
		return nil, func() {}, nil
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
