//go:build !linux

package ledger

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
