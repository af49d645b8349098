// Command bl is a git-native, file-backed backlog for developers and fleets
// of coding agents sharing one repository.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
