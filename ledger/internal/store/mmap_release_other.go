//go:build !linux

package store

// releaseMapped does nothing here: the data is read into the heap, or
// the system's madvise is not one the standard library offers.
func releaseMapped([]byte) {}
