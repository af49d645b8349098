//go:build unix

package store

import (
	"os"
	"syscall"
	"unsafe"
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

// releaseMapped tells the kernel that the mapped pages wholly inside data
// will not be needed soon: they leave the process's resident memory (a
// later read maps them in again from the page cache). A read of a whole
// large file in order (fill) keeps its footprint small this way.
func releaseMapped(data []byte) {
	page := uintptr(os.Getpagesize())
	if len(data) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(&data[0]))
	first := (start + page - 1) &^ (page - 1)
	last := (start + uintptr(len(data))) &^ (page - 1)
	if last <= first {
		return
	}
	_ = syscall.Madvise(data[first-start:last-start], syscall.MADV_DONTNEED)
}
