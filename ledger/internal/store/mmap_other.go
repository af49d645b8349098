//go:build !unix

package store

import "os"

// mapFile reads the first size bytes of f where memory mapping is not
// available.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), err error) {
	data = make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, nil, err
	}
	return data, func() {}, nil
}
