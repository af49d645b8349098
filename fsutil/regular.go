package fsutil

import (
	"fmt"
	"io"
	"os"
)

// NotRegularError: ReadRegular found a FIFO, a device, a socket or a
// directory at its path, which a plain read would wait on for ever (a
// FIFO nobody writes) or never finish (/dev/zero).
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "special file"
	switch {
	case e.Mode&os.ModeNamedPipe != 0:
		kind = "FIFO"
	case e.Mode&os.ModeSocket != 0:
		kind = "socket"
	case e.Mode&(os.ModeDevice|os.ModeCharDevice) != 0:
		kind = "device"
	case e.Mode.IsDir():
		kind = "directory"
	}
	return fmt.Sprintf("%s is a %s, not a regular file: bl does not read it", e.Path, kind)
}

// ReadRegular reads the file at path (a link followed) when it is a
// regular file. The check is made on the file opened, and the open does
// not wait on a FIFO (O_NONBLOCK where the platform has it): bl's settings
// files, read by every command, never hold a command in open(2).
func ReadRegular(path string) ([]byte, error) { return readRegular(path) }

// readAll reads r to its end into a buffer sized from the fstat (size),
// as os.ReadFile does: io.ReadAll's doubling would copy an archive segment
// of 170 MB about twice over.
func readAll(r io.Reader, size int64) ([]byte, error) {
	data := make([]byte, 0, size+512)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew since the fstat
		}
	}
}
