//go:build !linux

package store

import "os"

func Fdatasync(f *os.File) error { return f.Sync() }
