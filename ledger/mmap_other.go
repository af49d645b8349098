//go:build !unix

package ledger

import "os"

// mapFile reads the file whole where memory mapping is not available.
func mapFile(path string) (data []byte, unmap func(), err error) {
	data, err = os.ReadFile(path)
	return data, func() {}, err
}
