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
func ReadRegular(path string) ([]byte, error) { return readRegular(path, -1) }

// TooLargeError: ReadRegularMax found a file larger than it reads.
type TooLargeError struct {
	Path string
	Size int64 // as far as it was read
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over %d bytes, more than bl reads of it: bl does not read it", e.Path, e.Max)
}

// ReadRegularMax is ReadRegular for a file of at most max bytes (no bound
// when max < 0): a larger one is a *TooLargeError, found from the fstat or,
// for a file that grows as it is read, once max bytes were read.
func ReadRegularMax(path string, max int64) ([]byte, error) { return readRegular(path, max) }

// readAll reads r, the file at path, to its end into a buffer sized from
// the fstat (size), as os.ReadFile does: io.ReadAll's doubling would copy
// an archive segment of 170 MB about twice over. More than max bytes (max
// >= 0) is a *TooLargeError.
func readAll(r io.Reader, path string, size, max int64) ([]byte, error) {
	if max >= 0 && size > max {
		return nil, &TooLargeError{Path: path, Size: size, Max: max}
	}
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
		if max >= 0 && int64(len(data)) > max {
			return nil, &TooLargeError{Path: path, Size: int64(len(data)), Max: max}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew since the fstat
		}
	}
}
