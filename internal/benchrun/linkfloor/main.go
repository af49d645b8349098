//go:build linux

// Command linkfloor is the floor program with bl's required libraries
// linked in but unused: it starts, appends one line and fdatasyncs it.
// Next to the plain floor it shows what linking them costs every process
// (package initialisation, a larger binary to map and fault in) before bl
// does any work of its own.
package main

import (
	"os"
	"syscall"

	_ "github.com/alecthomas/kong"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/goccy/go-json"
	_ "github.com/gofrs/flock"
)

func main() {
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		panic(err)
	}
	f.Write([]byte("{\"v\":1,\"id\":\"0123456789abcdef\",\"op\":\"heartbeat\",\"card\":\"A1\",\"owner\":\"w\",\"epoch\":1}\n"))
	syscall.Fdatasync(int(f.Fd()))
	f.Close()
}
